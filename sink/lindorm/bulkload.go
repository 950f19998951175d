package lindorm

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/rekey/rekey/pipeline"
)

// BulkloadJob is the LTS bulkload job description (API: POST {LTS}:12311/pro/proc/bulkload/create
// with form fields src, dst, readerConfig, writerConfig, driverSpec, instances, fileType):
// rekey fills the parts it knows; src, dst, driverSpec and instances are the operator's.
type BulkloadJob struct {
	FileType     string       `json:"fileType"` // "parquet" or "csv"
	ReaderConfig ReaderConfig `json:"readerConfig"`
	WriterConfig WriterConfig `json:"writerConfig"`
	// Uncertain lists the fields whose exact form the public documentation leaves open; check
	// them against your LTS version before submitting.
	Uncertain []string `json:"rekey_uncertain,omitempty"`
}

// ReaderConfig says where the files are and which columns they hold, in file order.
type ReaderConfig struct {
	FilePath string `json:"filePath"`
	// Column: Parquet: column names; CSV: {"name", "type"} entries (CSV is untyped).
	Column    any     `json:"column"`
	Header    *bool   `json:"header,omitempty"`    // CSV only
	Delimiter *string `json:"delimiter,omitempty"` // CSV only
}

// CSVColumn is a typed column entry of a CSV reader config.
type CSVColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// WriterConfig names the target table and its columns in reader column order.
type WriterConfig struct {
	Namespace    string   `json:"namespace"`
	LindormTable string   `json:"lindormTable"`
	Compression  string   `json:"compression"` // Lindorm table compression: "zstd" or "none"
	Columns      []string `json:"columns"`
}

// BulkloadConfig renders bulkload.json for the files rekey wrote. format is "parquet" or "csv";
// dataDir is where the bulkload reads them (an OSS/HDFS path after upload). Columns are named in
// target-schema order, which is the order of the columns in every file.
func BulkloadConfig(schema pipeline.TargetSchema, format string, dataDir string) ([]byte, error) {
	if len(schema.Columns) == 0 {
		return nil, fmt.Errorf("lindorm: schema has no columns")
	}
	names := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		names[i] = c.Name
	}
	job := BulkloadJob{
		FileType: format,
		WriterConfig: WriterConfig{
			Namespace:    "default",
			LindormTable: schema.Table,
			Compression:  "zstd",
			Columns:      names,
		},
		ReaderConfig: ReaderConfig{FilePath: dataDir},
		Uncertain: []string{
			"readerConfig.filePath: whether the reader descends into the region-NNNN folders; if not, submit one job per region folder",
		},
	}
	switch format {
	case "parquet":
		job.ReaderConfig.Column = names
	case "csv":
		cols := make([]CSVColumn, len(schema.Columns))
		for i, c := range schema.Columns {
			cols[i] = CSVColumn{Name: c.Name, Type: c.SQLType()}
		}
		header, delim := true, ","
		job.ReaderConfig.Column = cols
		job.ReaderConfig.Header = &header
		job.ReaderConfig.Delimiter = &delim
		job.Uncertain = append(job.Uncertain,
			"readerConfig.column: the shape of a typed CSV column entry ({name, type} here)",
			"readerConfig.header / delimiter: field names and value forms",
			"CSV values: null is an empty unquoted field and the empty string is \"\"; whether the reader tells them apart",
		)
	default:
		return nil, fmt.Errorf("lindorm: unknown bulkload file type %q (want parquet or csv)", format)
	}
	return json.MarshalIndent(job, "", "  ")
}

// WriteBulkloadConfig writes bulkload.json into dir atomically.
func WriteBulkloadConfig(dir string, data []byte) error {
	return pipeline.WriteFileAtomic(filepath.Join(dir, BulkloadFile), data)
}

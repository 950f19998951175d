package lindorm

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
)

// BulkloadJob is bulkload.json: the form fields of LTS's bulkload API (POST
// http://{LTSMaster}:12311/pro/proc/bulkload/create, application/x-www-form-urlencoded, fields
// src, dst, readerConfig, writerConfig, driverSpec, instances, fileType;
// alibabacloud.com/help/en/lindorm/user-guide/submit-data-import-tasks-through-api), with
// readerConfig and writerConfig as JSON objects (the form takes each as a JSON string). The same
// fields fill the console's Import to Lindorm/HBase > Universal Import > Create task form.
type BulkloadJob struct {
	Src          string       `json:"src"`        // LTS data source holding the files (OSS or HDFS)
	Dst          string       `json:"dst"`        // LTS data source of the LindormTable
	FileType     string       `json:"fileType"`   // "Parquet", "CSV", as the API documents them
	DriverSpec   string       `json:"driverSpec"` // small, medium, large, xlarge; the docs say large
	Instances    int          `json:"instances"`  // Spark executors; a job runs 4 tasks per executor
	ReaderConfig ReaderConfig `json:"readerConfig"`
	WriterConfig WriterConfig `json:"writerConfig"`
	// Warnings say when the job as written loads the files wrongly, and what to submit instead
	// (a replication's segments: JobOptions.Segments).
	Warnings []string `json:"rekey_warnings,omitempty"`
	// Uncertain lists the fields whose exact form the public documentation leaves open, each
	// with how to check it; check them against your LTS version before a full load.
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
	Compression  string   `json:"compression"` // "zstd" or "none" (the only values documented)
	Columns      []string `json:"columns"`
	// Timestamp is the cells' timestamp in Lindorm (epoch milliseconds); omitted: LTS's own.
	Timestamp *int64 `json:"timestamp,omitempty"`
}

// Placeholders written when --lts-source / --lts-target are not given: LTS refuses them by
// name, so a job submitted unedited fails at once instead of reading the wrong source.
const (
	SourcePlaceholder = "<--lts-source: the LTS data source of the files>"
	TargetPlaceholder = "<--lts-target: the LTS data source of LindormTable>"
)

// JobOptions is what the job needs beyond the table: where the output is and the LTS names.
type JobOptions struct {
	// FileType is the API's fileType of the files ("Parquet", "CSV"): what their format declares
	// (sink/formats' LoadAs); empty: the job cannot read them.
	FileType string
	// Out is the output location as given to --out: a local folder, or s3://BUCKET/PREFIX or
	// oss://BUCKET/PREFIX (query parameters ignored), which the job reads as a bucket.
	Out string
	// Store makes the job read Out as a bucket whatever its scheme (a location that is not one
	// is then an error); without it, Out's scheme decides (output.InBucket).
	Store bool
	// DataDir is the folder under Out that holds the data files and nothing else (the output's
	// layout names it: output.DataDir), so that the job's Spark listing reads no manifest, DDL or
	// rejects as data.
	DataDir string
	// Source and Target are the LTS data-source names (--lts-source, --lts-target); empty:
	// placeholders.
	Source, Target string
	Namespace      string // default "default"
	DriverSpec     string // default "large"
	Instances      int    // default: one per 4 regions (a job runs 4 tasks per executor), 1..32
	Regions        int    // the region count, for the Instances default
	// Timestamp sets writerConfig.timestamp: when the run started reading its source, so that
	// any write made to the table after that (the application, replicate) is newer than the
	// loaded cells and wins. Zero: omitted.
	Timestamp time.Time
	// Segments says the files are a replication's segments (rekey replicate), which load right
	// only one by one in manifest.json's order, each before its delete file: the job warns so
	// (segmentsWarning).
	Segments bool
	// Slice, when set, is the name prefix of the data files of one time slice
	// (output.SliceFilePrefix): the job reads only those (filePath "data/*/PREFIX*") and Timestamp
	// is the slice's newest write time, at most the run's start (SliceJobs).
	Slice string
}

// inBucket tells whether the job reads a bucket: Store says so, or Out is s3://, oss://. Every
// caller's Out names where the files are (replicate's defaults to its store's location), so the
// files' place is decided once, here.
func (o JobOptions) inBucket() bool { return o.Store || output.InBucket(o.Out) }

// RegionGlob ends readerConfig.filePath: the job reads every region folder under the data folder
// ("data/*/"). Spark, which LTS runs the import on, reads only the files directly inside a folder
// it is given: it descends into a subfolder only when the subfolder is a partition ("k=v") or the
// job sets recursiveFileLookup, so a filePath of "data/" reads no file at all
// (PartitioningAwareFileIndex.allFiles; measured with Spark 4.0.1 by deploy/dev/spark). Spark
// expands the glob (Hadoop's globStatus) to each region folder and reads the files in each, still
// skipping names that start with "_" or ".".
const RegionGlob = "*/"

// DataFilePath is readerConfig.filePath for an output: the region folders (RegionGlob) of its
// folder dataDir ("data/*/"), relative to the data source's root (the bucket) as in the API's
// example ("parquet/") when the output is on a store, an absolute local path otherwise.
func DataFilePath(out, dataDir string, store bool) (string, error) {
	dir, err := dataFolder(out, dataDir, store)
	if err != nil {
		return "", err
	}
	return dir + RegionGlob, nil
}

// dataFolder is DataFilePath without the glob: the data folder itself, with a trailing slash.
func dataFolder(out, dataDir string, store bool) (string, error) {
	if dataDir == "" {
		return "", fmt.Errorf("lindorm: no data folder given for the job's filePath")
	}
	dir, err := output.LoaderPath(out, dataDir, store)
	if err != nil {
		return "", fmt.Errorf("lindorm: %w", err)
	}
	return dir, nil
}

// readerColumns describe in readerConfig the columns of files of a fileType whose columns the
// job cannot read by name alone; the job reads any other type (Parquet: self-describing files)
// by the columns' names in file order.
var readerColumns = map[string]func(job *BulkloadJob, schema pipeline.TargetSchema){
	"CSV": csvReader,
}

// csvReader describes typed CSV columns with a header row, comma-separated, as sink/csv writes
// them.
func csvReader(job *BulkloadJob, schema pipeline.TargetSchema) {
	cols := make([]CSVColumn, len(schema.Columns))
	for i, c := range schema.Columns {
		cols[i] = CSVColumn{Name: c.Name, Type: c.SQLType()}
	}
	header, delim := true, ","
	job.ReaderConfig.Column = cols
	job.ReaderConfig.Header = &header
	job.ReaderConfig.Delimiter = &delim
	job.Uncertain = append(job.Uncertain,
		"readerConfig.column: the shape of a typed CSV column entry ({name, type} here, SQL type names); check: the "+
			"console's reader example for CSV",
		"readerConfig.header / delimiter: field names and value forms (one docs page spells it \"delimite\"); check: a "+
			"one-region job reads the header row as a header, not as a row",
		"CSV values: written for Spark's CSV reader with its default options (an empty unquoted field is NULL; \\\" and \\\\ "+
			"escape inside quotes; TIMESTAMP as 2024-01-02T03:04:05.678Z), as deploy/dev/spark reads them back; rows holding an "+
			"empty string or a line break, which it cannot read back, are rejects (csv_value); check: if LTS sets its own CSV "+
			"options (escape, nullValue, multiLine), SELECT a row holding a quote and a backslash after a one-region job",
	)
}

// BulkloadConfig renders bulkload.json for the files rekey wrote. Columns are named in
// target-schema order, which is the order of the columns in every file.
func BulkloadConfig(schema pipeline.TargetSchema, opt JobOptions) ([]byte, error) {
	job, err := NewBulkloadJob(schema, opt)
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(job, "", "  ")
}

// NewBulkloadJob builds the job bulkload.json holds.
func NewBulkloadJob(schema pipeline.TargetSchema, opt JobOptions) (*BulkloadJob, error) {
	if len(schema.Columns) == 0 {
		return nil, fmt.Errorf("lindorm: schema has no columns")
	}
	if opt.FileType == "" {
		return nil, fmt.Errorf("lindorm: no bulkload file type: the job cannot read the files")
	}
	filePath, err := DataFilePath(opt.Out, opt.DataDir, opt.inBucket())
	if err != nil {
		return nil, err
	}
	names := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		names[i] = c.Name
	}
	job := &BulkloadJob{
		Src: opt.Source, Dst: opt.Target, FileType: opt.FileType,
		DriverSpec: opt.DriverSpec, Instances: opt.Instances,
		WriterConfig: WriterConfig{
			Namespace:    opt.Namespace,
			LindormTable: schema.Table,
			Compression:  "zstd",
			Columns:      names,
		},
		ReaderConfig: ReaderConfig{FilePath: filePath},
	}
	if opt.Slice != "" {
		job.ReaderConfig.FilePath += opt.Slice + "*"
	}
	if job.Src == "" {
		job.Src = SourcePlaceholder
	}
	if job.Dst == "" {
		job.Dst = TargetPlaceholder
	}
	if job.WriterConfig.Namespace == "" {
		job.WriterConfig.Namespace = "default"
	}
	if job.DriverSpec == "" {
		job.DriverSpec = "large"
	}
	if job.Instances <= 0 {
		job.Instances = min(max((opt.Regions+3)/4, 1), 32)
	}
	if !opt.Timestamp.IsZero() {
		ms := opt.Timestamp.UnixMilli()
		job.WriterConfig.Timestamp = &ms
	}
	if opt.Segments {
		job.Warnings = []string{segmentsWarning}
	}
	job.Uncertain = jobUncertain(opt)
	job.ReaderConfig.Column = names
	if describe := readerColumns[opt.FileType]; describe != nil {
		describe(job, schema)
	}
	return job, nil
}

// segmentsWarning is the warning of a job over a replication's segments: one job over data/*/
// stamps every cell with one time, so of a key written in several segments either version may
// stay, and a segment's delete file must run after its data and before the next segment's
// (replicate/README.md); submitted again after more rolls, it loads the older segments again
// over what changed since.
const segmentsWarning = "this job reads every segment of the replication at once (" + "data/" + RegionGlob + ") and stamps all their cells with one time: " +
	"it loads right only segments that hold each key once and no delete file (deletes/ empty), loaded once. Otherwise a key written in " +
	"two segments keeps either version and the deletes cannot run between the segments: submit one job per segment, in the order of " +
	"manifest.json's replication.segments, readerConfig.filePath the segment's data file, and run the segment's delete file (deletes/) " +
	"after it; a segment loaded once is not loaded again (a later load would put its rows back over newer changes)"

// jobUncertain is the job's rekey_uncertain list before its format's entries: what the API's
// documentation leaves open about the file path, the file type and the timestamp, and how to check it.
func jobUncertain(opt JobOptions) []string {
	uncertain := []string{
		"readerConfig.filePath: a glob, " + opt.DataDir + "/" + RegionGlob + ", naming every region folder (Spark reads only the files directly in a folder, " +
			"so " + opt.DataDir + "/ alone reads none); check: the job's row count (SELECT COUNT(*)) equals manifest.json rows_written; if LTS " +
			"refuses the glob, submit one job per " + opt.DataDir + "/region-NNNN/ folder",
		"readerConfig.filePath: taken as relative to the data source's root (the bucket), as in the API example \"parquet/\"; " +
			"check: if the OSS/HDFS data source itself points at a folder, drop that folder from the path; a local --out " +
			"gives a local path: upload " + opt.DataDir + "/ and set the path it has in the data source",
		"fileType: \"Parquet\" / \"CSV\" as the API page writes them; check: if the API answers that the file type is unknown, " +
			"try the console's File Type list and use its spelling",
	}
	if opt.Slice != "" {
		uncertain = append(uncertain,
			"readerConfig.filePath: ends in a file-name glob ("+opt.Slice+"*) that picks this time slice's files out of every region folder; "+
				"check: the job's row count equals the rows of the manifest's files named "+opt.Slice+"*; if LTS refuses the glob, "+
				"copy those files into a folder of their own (keeping the region folders) and point filePath there",
			"writerConfig.timestamp: the newest Cassandra write time (epoch milliseconds) of the rows in this slice; check: load "+
				"one region first and read a cell's timestamp back; if LTS refuses the field, the slice's cells get the load time "+
				"and a table TTL counts from the load")
	} else if !opt.Timestamp.IsZero() {
		uncertain = append(uncertain,
			"writerConfig.timestamp: documented only as the data's timestamp in the table; rekey writes epoch milliseconds of "+
				"the run's start so later writes win over loaded cells; check: load one region first; if LTS refuses the field, "+
				"delete it (cells then get the load time, and a load after live writes overwrites them)")
	}
	return uncertain
}

package verify

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/csv"
)

// writeCSVFolder writes rows to one CSV data file as the csv format writes them, each line
// passed through edit (the line's fields and the row's index) first, and returns the folder
// target holding it.
func writeCSVFolder(t *testing.T, schema pipeline.TargetSchema, rows [][]pipeline.Value, edit func(fields []string, i int)) *Folder {
	t.Helper()
	f := csv.New()
	var names []string
	for _, c := range schema.Columns {
		names = append(names, c.Name)
	}
	text := strings.Join(names, ",") + "\n"
	for i, r := range rows {
		fields := make([]string, len(r))
		for j, c := range schema.Columns {
			b, err := f.AppendValue(nil, c, r[j])
			if err != nil {
				t.Fatal(err)
			}
			fields[j] = string(b)
		}
		edit(fields, i)
		text += strings.Join(fields, ",") + "\n"
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "part.csv"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return &Folder{Objects: localStore(t, dir), Location: dir, Format: "csv",
		Files: []pipeline.FileInfo{{Path: "part.csv", Rows: int64(len(rows))}}, Rows: int64(len(rows))}
}

// A CSV target whose TIMESTAMP is written as epoch milliseconds (as rekey wrote CSV before it
// wrote ISO 8601) is not EQUAL: Spark's CSV reader, which Lindorm's bulk load runs, loads such a
// field as NULL. Before, verify read the number as the timestamp and said EQUAL.
func TestCSVTargetWithEpochMillisecondTimestampsIsNotEqual(t *testing.T) {
	p := testProgram(t)
	schema := p.Target()
	recs := testRecords(50)
	ts := schema.Index("ts")
	rows := migrated(t, p, recs).list()
	folder := writeCSVFolder(t, schema, rows, func(fields []string, i int) {
		if i == 7 {
			fields[ts] = strconv.FormatInt(rows[i][ts].Num, 10)
		}
	})
	res, err := Run(context.Background(), Config{Program: p, Source: &sliceSource{recs}, Folder: folder, TmpDir: t.TempDir(), Workers: 2})
	if err == nil && res.Equal {
		t.Fatalf("a CSV TIMESTAMP in epoch milliseconds (which the bulk load reads as NULL) verified EQUAL: %+v", res)
	}
	if err != nil && (!strings.Contains(err.Error(), "column ts") || !strings.Contains(err.Error(), "epoch milliseconds")) {
		t.Fatalf("want an error naming the column and the epoch milliseconds, got %v", err)
	}
	t.Logf("verify: %v", err)
}

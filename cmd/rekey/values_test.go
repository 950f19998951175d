package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sinktest"
)

const valuesMapping = `version: 1
source:
  name: deliveries
  %s
  columns: {id: bigint, status: text, note: text, ts: timestamp}
target:
  table: deliveries
  primary_key: "[id]"
`

// migrateValues runs migrate on one input file and returns the manifest, the rejects and every
// written row (id -> values), read back with the independent Parquet reader.
func migrateValues(t *testing.T, name, input, sourceLine string) (*output.Manifest, []output.Reject, map[int64][]pipeline.Value) {
	t.Helper()
	dir := t.TempDir()
	in := writeFile(t, dir, name, input)
	mapping := writeFile(t, dir, "m.yaml", fmt.Sprintf(valuesMapping, sourceLine))
	out := filepath.Join(dir, "out")
	// few rows, several of them rejected on purpose: no reject limit; exit 1 when any is
	code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+in, "--out", out, "--progress", "never", "--max-rejects", "-1")
	if code != 0 && code != exitRejects {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	var rejects []output.Reject
	var lines []string // a run without rejects writes no rejects file
	if _, err := os.Stat(filepath.Join(out, output.RejectsFile)); err == nil {
		lines = readLines(t, filepath.Join(out, output.RejectsFile))
	}
	for _, line := range lines {
		var rj output.Reject
		if err := json.Unmarshal([]byte(line), &rj); err != nil {
			t.Fatalf("rejects line %q: %v", line, err)
		}
		rejects = append(rejects, rj)
	}
	schema := compileFile(t, mapping).Target()
	rows := map[int64][]pipeline.Value{}
	for _, r := range m.Regions {
		for _, fe := range r.Files {
			pf, err := sinktest.ReadParquet(filepath.Join(out, filepath.FromSlash(fe.Path)), schema)
			if err != nil {
				t.Fatalf("%s: %v", fe.Path, err)
			}
			for _, vals := range pf.Values {
				for c, v := range vals {
					if schema.Columns[c].Type == pipeline.TypeVarchar && !utf8.ValidString(v.Str) {
						t.Errorf("%s: STRING column %s holds invalid UTF-8 %q: readers refuse the file", fe.Path, schema.Columns[c].Name, v.Str)
					}
				}
				rows[vals[0].Num] = vals
			}
		}
	}
	if m.RowsIn != m.RowsWritten+m.RowsRejected || int64(len(rows)) != m.RowsWritten || int64(len(rejects)) != m.RowsRejected {
		t.Fatalf("counts: in %d written %d (read %d) rejected %d (lines %d)", m.RowsIn, m.RowsWritten, len(rows), m.RowsRejected, len(rejects))
	}
	return m, rejects, rows
}

// Before, CSV input `DELIV\xFF\xFEERED` (and the same in JSON Lines, raw or as a lone surrogate
// escape) was written into a Parquet STRING column, and DuckDB refused the whole file ("Invalid
// string encoding found in Parquet file"). Each such row is now a reject with code encoding naming
// the field and the line; every other row is written and the file reads.
func TestMigrateInvalidUTF8IsRejected(t *testing.T) {
	t.Parallel()
	csvIn := "id,status,note,ts\n" +
		"1,DELIVERED,ok,1704067200000\n" +
		"2,DELIV\xff\xfeERED,bad status,1704067200000\n" +
		"3,送达,\"multi-byte, fine\",1704067200000\n" +
		"4,DELIVERED,\"quoted \xc3\",1704067200000\n" +
		"5,PAID,,1704067200000\n"
	jsonlIn := `{"id":1,"status":"DELIVERED","ts":1704067200000}` + "\n" +
		`{"id":2,"status":"DELIV` + "\xff\xfe" + `ERED"}` + "\n" +
		`{"id":3,"status":"\u9001\u8fbe \ud83d\ude00"}` + "\n" +
		`{"id":4,"note":"\udc80 lone surrogate"}` + "\n" +
		`{"id":5,"note":"escaped \" and raw ` + "\xe4\xb8" + `"}` + "\n"
	for _, c := range []struct {
		name, input string
		fields      map[int64]string // rejected id -> field
	}{
		{"in.csv", csvIn, map[int64]string{2: "status", 4: "note"}},
		{"in.jsonl", jsonlIn, map[int64]string{2: "status", 4: "note", 5: "note"}},
	} {
		m, rejects, rows := migrateValues(t, c.name, c.input, "")
		if m.RowsIn != 5 || m.RowsRejected != int64(len(c.fields)) {
			t.Errorf("%s: in %d rejected %d, want 5 and %d", c.name, m.RowsIn, m.RowsRejected, len(c.fields))
		}
		for _, rj := range rejects {
			line := rj.Seq // the line of the row: id+1 (after the header) in CSV, id in JSON Lines
			id := line
			if strings.HasSuffix(c.name, ".csv") {
				id--
			}
			if rj.Code != pipeline.CodeEncoding || rj.Field != c.fields[id] || !strings.Contains(rj.Message, "UTF-8") ||
				rj.Position != fmt.Sprintf("%s:%d", c.name, line) {
				t.Errorf("%s: reject %+v; want code encoding on field %q", c.name, rj, c.fields[id])
			}
		}
		for id := int64(1); id <= 5; id++ {
			if _, bad := c.fields[id]; bad == (rows[id] != nil) {
				t.Errorf("%s: row %d written: %v", c.name, id, rows[id] != nil)
			}
		}
		if r := rows[3]; r == nil || !strings.HasPrefix(r[1].Str, "送达") {
			t.Errorf("%s: multi-byte row: %v", c.name, r)
		}
	}
}

// Before, nanosecond timestamps were truncated to milliseconds, and epoch seconds (1704067200) read
// as milliseconds (1970-01-20).
func TestMigrateTimestampPrecisionAndUnits(t *testing.T) {
	t.Parallel()
	in := "id,status,note,ts\n" +
		"1,a,,1704067200\n" + // epoch seconds
		"2,a,,2024-01-01T00:00:12.345678901Z\n" + // sub-millisecond digits
		"3,a,,2024-01-01T00:00:12.345000000Z\n" + // nanosecond text, exact
		"4,a,,1704067212345\n" // epoch milliseconds

	m, rejects, rows := migrateValues(t, "ts.csv", in, "")
	if m.RowsRejected != 2 || len(rejects) != 2 {
		t.Fatalf("rejected %d, want rows 1 and 2", m.RowsRejected)
	}
	if rj := rejects[0]; rj.Seq != 2 || rj.Code != pipeline.CodeType || rj.Field != "ts" ||
		!strings.Contains(rj.Message, "looks like epoch seconds (2024-01-01T00:00:00.000Z), not milliseconds (1970-01-20T17:21:07.200Z); set source.timestamp_unit: s in the mapping, or ms to accept it") {
		t.Errorf("epoch seconds: %+v", rj)
	}
	if rj := rejects[1]; rj.Seq != 3 || rj.Code != pipeline.CodeType || !strings.Contains(rj.Message, "sub-millisecond digits, which Lindorm's TIMESTAMP (milliseconds) cannot hold") {
		t.Errorf("sub-ms: %+v", rj)
	}
	if rows[3][3].Num != 1704067212345 || rows[4][3].Num != 1704067212345 {
		t.Errorf("exact values: %v %v", rows[3], rows[4])
	}

	// with source.timestamp_unit: s, 1704067200 is 2024-01-01T00:00:00Z
	_, rejects, rows = migrateValues(t, "ts.csv", "id,status,note,ts\n1,a,,1704067200\n2,a,,2024-01-01T00:00:01Z\n", "timestamp_unit: s")
	if len(rejects) != 0 || rows[1][3].Num != 1704067200000 || rows[2][3].Num != 1704067201000 {
		t.Errorf("unit s: rejects %+v rows %v", rejects, rows)
	}
	// with us, a value that is not a whole millisecond is a reject, not rounded
	_, rejects, rows = migrateValues(t, "ts.csv", "id,status,note,ts\n1,a,,1704067200123000\n2,a,,1704067200123456\n", "timestamp_unit: us")
	if len(rejects) != 1 || rejects[0].Seq != 3 || !strings.Contains(rejects[0].Message, "sub-millisecond") || rows[1][3].Num != 1704067200123 {
		t.Errorf("unit us: rejects %+v rows %v", rejects, rows)
	}
}

// A blob given as "" (CSV) or "" (JSON Lines) is the empty blob, as the README says of `""`, not
// null: the Parquet file holds an empty, non-null binary, and verify compares it as such (equal
// after migrate; different once the file holds null there instead).
func TestMigrateEmptyBlobIsNotNull(t *testing.T) {
	t.Parallel()
	const mapping = `version: 1
source:
  name: things
  columns: {id: bigint, bl: blob, n: int}
target:
  table: things
  primary_key: "[id]"
`
	// n keeps the row with the null blob from holding nothing but its key (key_only_row)
	for _, c := range []struct{ name, input string }{
		{"in.csv", "id,bl,n\n1,\"\",1\n2,,2\n3,0x01,3\n"},
		{"in.jsonl", `{"id":1,"bl":"","n":1}` + "\n" + `{"id":2,"bl":null,"n":2}` + "\n" + `{"id":3,"bl":"0x01","n":3}` + "\n"},
	} {
		dir := t.TempDir()
		in := writeFile(t, dir, c.name, c.input)
		m := writeFile(t, dir, "m.yaml", mapping)
		out := filepath.Join(dir, "out")
		mustRun(t, "migrate", "-m", m, "--source", "file:"+in, "--out", out, "--progress", "never")
		man, err := outputtest.Manifest(out)
		if err != nil {
			t.Fatal(err)
		}
		schema := compileFile(t, m).Target()
		got := map[int64]pipeline.Value{}
		var file string
		var rows [][]pipeline.Value
		for _, r := range man.Regions {
			for _, fe := range r.Files {
				pf, err := sinktest.ReadParquet(filepath.Join(out, filepath.FromSlash(fe.Path)), schema)
				if err != nil {
					t.Fatal(err)
				}
				for _, vals := range pf.Values {
					got[vals[0].Num] = vals[1]
					if vals[0].Num == 1 {
						file, rows = filepath.Join(out, filepath.FromSlash(fe.Path)), pf.Values
					}
				}
			}
		}
		if v := got[1]; v.Kind != pipeline.KindBytes || v.Str != "" {
			t.Errorf("%s: the empty blob was written as %v (kind %s), want an empty binary", c.name, v, v.Kind)
		}
		if v := got[2]; !v.IsNull() {
			t.Errorf("%s: the null blob was written as %v (kind %s), want null", c.name, v, v.Kind)
		}
		if v := got[3]; v.Kind != pipeline.KindBytes || v.Str != "\x01" {
			t.Errorf("%s: 0x01 was written as %v", c.name, v)
		}
		args := []string{"verify", "-m", m, "--source", "file:" + in, "--target", out, "--progress", "never", "-q"}
		if code, stdout, stderr := runCLI(t, args...); code != 0 || !strings.Contains(stdout, "EQUAL") {
			t.Fatalf("%s: verify after migrate: exit %d\n%s%s", c.name, code, stdout, stderr)
		}
		for _, vals := range rows {
			if vals[0].Num == 1 {
				vals[1] = pipeline.Null
			}
		}
		rewriteParquet(t, file, schema, rows)
		if code, stdout, stderr := runCLI(t, args...); code != exitDifferent || !strings.Contains(stdout, "1 differ") {
			t.Fatalf("%s: verify of a null where the source has an empty blob: exit %d\n%s%s", c.name, code, stdout, stderr)
		}
	}
}

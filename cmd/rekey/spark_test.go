package main

// The Spark tier: real Apache Spark (deploy/dev/spark) reads rekey's outputs the way Lindorm's
// bulkload job does (LTS runs the import on Spark), configured from bulkload.json alone, and what
// it reads is compared with the source's values as this file states them, never with rekey's own
// reader. It runs when REKEY_SPARK_READER names deploy/dev/spark/spark.sh (after `spark.sh
// resolve`); with REKEY_REQUIRE_REAL_PEERS=1 a missing or failing reader fails it instead of
// skipping. `bash deploy/dev/spark/spark.sh ci-test` does both.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/sink/lindorm"
)

// sparkReader is the command that runs deploy/dev/spark's reader, or the test skips (fails when
// the real peers are required).
func sparkReader(t *testing.T) string {
	t.Helper()
	r := os.Getenv("REKEY_SPARK_READER")
	if r == "" {
		if os.Getenv("REKEY_REQUIRE_REAL_PEERS") == "1" {
			t.Fatal("REKEY_REQUIRE_REAL_PEERS=1 but REKEY_SPARK_READER is not set: run deploy/dev/spark/spark.sh resolve and set it to deploy/dev/spark/spark.sh (or run spark.sh ci-test)")
		}
		t.Skip("REKEY_SPARK_READER is not set: the Spark tier needs deploy/dev/spark/spark.sh resolve (see docs/testing.md)")
	}
	return r
}

// sparkCol is one source column of the Spark tier's table, the target type it becomes and how
// its source text reads in Spark.
type sparkCol struct {
	name, cql string
	target    string // the mapping's cast, "" to keep the inferred type
	sql       string // the Lindorm SQL type bulkload.json and ddl.sql name
	scale     int    // DECIMAL only
}

var sparkCols = []sparkCol{
	{name: "id", cql: "bigint", sql: "BIGINT"},
	{name: "s", cql: "text", sql: "VARCHAR"},
	{name: "js", cql: "text", target: "js :: JSON", sql: "JSON"},
	{name: "i", cql: "int", sql: "INTEGER"},
	{name: "si", cql: "smallint", sql: "SMALLINT"},
	{name: "ti", cql: "tinyint", sql: "TINYINT"},
	{name: "b", cql: "boolean", sql: "BOOLEAN"},
	{name: "f", cql: "float", sql: "FLOAT"},
	{name: "d", cql: "double", sql: "DOUBLE"},
	{name: "d5", cql: "decimal", target: "d5 :: DECIMAL(5,2)", sql: "DECIMAL(5,2)", scale: 2},
	{name: "d9", cql: "decimal", target: "d9 :: DECIMAL(9,3)", sql: "DECIMAL(9,3)", scale: 3},
	{name: "d18", cql: "decimal", target: "d18 :: DECIMAL(18,4)", sql: "DECIMAL(18,4)", scale: 4},
	{name: "d38", cql: "decimal", target: "d38 :: DECIMAL(38,10)", sql: "DECIMAL(38,10)", scale: 10},
	{name: "d38z", cql: "decimal", target: "d38z :: DECIMAL(38,0)", sql: "DECIMAL(38,0)", scale: 0},
	{name: "ts", cql: "timestamp", sql: "TIMESTAMP"},
	{name: "dt", cql: "date", sql: "DATE"},
	{name: "bl", cql: "blob", sql: "VARBINARY"},
}

// sparkRow is one source row: column -> source text (absent: null). csvReject names why the CSV
// output must reject it ("" when CSV keeps it), anyReject why every output must.
type sparkRow struct {
	v                    map[string]string
	csvReject, anyReject string
}

func ms(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// sparkRows covers each type's edges: nulls, extremes, dates and timestamps before 1582 and
// 1900, decimals at full precision, unicode, empty strings and blobs, quotes, backslashes, line
// breaks, the CSV-special characters.
func sparkRows() map[int64]sparkRow {
	rows := map[int64]sparkRow{
		1: {v: map[string]string{"s": "hello", "js": `{"a":[1,2]}`, "i": "1", "si": "2", "ti": "3", "b": "true", "f": "1.5", "d": "2.25",
			"d5": "123.45", "d9": "-123456.789", "d18": "12345678901234.5678", "d38": "1234567890123456789012345678.0123456789",
			"d38z": "12345678901234567890123456789012345678", "ts": ms("2024-01-02T03:04:05.678Z"), "dt": "2024-02-29", "bl": "0x00ff10"}},
		2: {v: map[string]string{"s": "min", "i": "-2147483648", "si": "-32768", "ti": "-128", "b": "false", "f": "-3.4028235e38", "d": "-1.7976931348623157e308",
			"d5": "-999.99", "d9": "-999999.999", "d18": "-99999999999999.9999", "d38": "-9999999999999999999999999999.9999999999",
			"d38z": "-99999999999999999999999999999999999999", "ts": ms("0001-01-01T00:00:00Z"), "dt": "0001-01-01", "bl": "0x00"}},
		3: {v: map[string]string{"s": "max", "i": "2147483647", "si": "32767", "ti": "127", "f": "3.4028235e38", "d": "1.7976931348623157e308",
			"d5": "999.99", "d9": "999999.999", "d18": "99999999999999.9999", "d38": "9999999999999999999999999999.9999999999",
			"d38z": "99999999999999999999999999999999999999", "ts": ms("9999-12-31T23:59:59.999Z"), "dt": "9999-12-31", "bl": "0xffffffff"}},
		4: {v: map[string]string{"s": "only s; every other column null"}},
		5: {v: map[string]string{"i": "5", "ts": ms("1582-10-04T23:59:59.999Z"), "dt": "1582-10-04"}}, // the last Julian day
		6: {v: map[string]string{"i": "6", "ts": ms("1582-10-15T00:00:00Z"), "dt": "1582-10-15"}},     // the first Gregorian day
		7: {v: map[string]string{"i": "7", "ts": ms("1899-12-31T23:59:59.999Z"), "dt": "1899-12-31"}},
		8: {v: map[string]string{"i": "8", "ts": ms("1000-03-01T12:00:00Z"), "dt": "1000-03-01", "d5": "0.01", "d9": "0.001", "d18": "0.0001",
			"d38": "0.0000000001", "d38z": "0"}},
		9:  {v: map[string]string{"s": "送达 😀 ñ 𝄞", "js": `{"k":"送达"}`}},
		10: {v: map[string]string{"s": `a "quoted", back\slash\`, "js": `{"q":"a\"b\\c"}`}},
		11: {v: map[string]string{"s": `ends with a backslash\`, "js": `"\\"`}},
		12: {v: map[string]string{"s": " \tpadded\t ", "js": "[]"}},
		13: {v: map[string]string{"s": "#not a comment", "js": "null"}},
		14: {v: map[string]string{"s": "NULL", "js": `"null"`}},
		15: {v: map[string]string{"s": `\N`, "js": `"\\N"`}},
		16: {v: map[string]string{"s": `""`, "js": `""`}},
		17: {v: map[string]string{"f": "NaN", "d": "NaN"}},
		18: {v: map[string]string{"f": "Infinity", "d": "-Infinity"}},
		19: {v: map[string]string{"f": "-0.0", "d": "-0.0"}},
		20: {v: map[string]string{"f": "1e-45", "d": "5e-324"}},
		21: {v: map[string]string{"i": "21", "ts": "-1", "dt": "1969-12-31"}},
		22: {v: map[string]string{"i": "22", "ts": "0", "dt": "1970-01-01"}},
		// the edges of Spark's TIMESTAMP (microseconds in an int64)
		23: {v: map[string]string{"i": "23", "ts": "9223372036854775"}},
		24: {v: map[string]string{"i": "24", "ts": "-9223372036854775"}},
		25: {v: map[string]string{"i": "25", "ts": "9223372036854776"}, anyReject: "timestamp beyond Spark's range"},
		26: {v: map[string]string{"i": "26", "ts": "-9223372036854775808"}, anyReject: "timestamp beyond Spark's range"},
		27: {v: map[string]string{"s": "", "i": "27"}, csvReject: "empty string"},
		28: {v: map[string]string{"js": `{"a":1}`, "bl": "", "i": "28"}},
		29: {v: map[string]string{"s": "two\nlines", "i": "29"}, csvReject: "line break"},
		30: {v: map[string]string{"s": "carriage\rreturn", "i": "30"}, csvReject: "line break"},
		31: {v: map[string]string{"js": "{\"a\":\n1}", "i": "31"}, csvReject: "line break"},
	}
	// enough ordinary rows for several regions and several files per region
	for id := int64(1000); id < 1400; id++ {
		rows[id] = sparkRow{v: map[string]string{
			"s": fmt.Sprintf("row %d, \"ordinary\"", id), "i": strconv.FormatInt(id*7, 10), "b": strconv.FormatBool(id%2 == 0),
			"d": strconv.FormatFloat(float64(id)/3, 'g', -1, 64), "d18": fmt.Sprintf("%d.%04d", id, id%10000),
			"ts": strconv.FormatInt(1700000000000+id*86400001, 10), "dt": time.Unix((id-1200)*86400*365, 0).UTC().Format("2006-01-02"),
			"bl": fmt.Sprintf("0x%04x", id)}}
	}
	return rows
}

// sparkInput writes the rows as a CSV input (every non-null field quoted, "" for the empty
// string) and the mapping; csv leaves the VARBINARY column out (rekey refuses it in CSV).
func sparkInput(t *testing.T, dir, name string, rows map[int64]sparkRow, ids []int64, withBlob bool) (input, mapping string) {
	t.Helper()
	var in strings.Builder
	var cols []sparkCol
	for _, c := range sparkCols {
		if c.name != "bl" || withBlob {
			cols = append(cols, c)
		}
	}
	for i, c := range cols {
		if i > 0 {
			in.WriteByte(',')
		}
		in.WriteString(c.name)
	}
	in.WriteByte('\n')
	for _, id := range ids {
		in.WriteString(strconv.FormatInt(id, 10))
		for _, c := range cols[1:] {
			in.WriteByte(',')
			if v, ok := rows[id].v[c.name]; ok {
				in.WriteString(`"` + strings.ReplaceAll(v, `"`, `""`) + `"`)
			}
		}
		in.WriteByte('\n')
	}
	var m strings.Builder
	m.WriteString("version: 1\nsource:\n  name: sparktypes\n  timestamp_unit: ms\n  columns:\n")
	for _, c := range cols {
		fmt.Fprintf(&m, "    %s: %s\n", c.name, c.cql)
	}
	m.WriteString("target:\n  table: sparktypes\n  primary_key: \"[id]\"\n  columns:\n")
	for _, c := range cols {
		if c.target != "" {
			fmt.Fprintf(&m, "    %s: %q\n", c.name, c.target)
		}
	}
	return writeFile(t, dir, name, in.String()), writeFile(t, dir, strings.TrimSuffix(name, ".csv")+".yaml", m.String())
}

// sparkOutput is one output the tier migrates and Spark reads.
type sparkOutput struct {
	name   string
	csv    bool
	out    string  // the output folder
	ids    []int64 // the source rows it was given
	merged bool    // written by shards into one folder, finished by rekey merge
}

// sparkRead is what Spark read of one folder (SparkRead.java's lines).
type sparkRead struct {
	Reader string // Parquet: vectorized or row
	Files  []string
	Schema []struct{ Name, Type string }
	Rows   []map[string]json.RawMessage
	Where  []string // each row's file
	Error  string
	End    bool
}

func readSparkLines(t *testing.T, path string) sparkRead {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r sparkRead
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			Read   *string
			Reader string
			Files  []string
			Schema []struct{ Name, Type string }
			Row    map[string]json.RawMessage
			File   string
			Error  *string
			End    *struct{ Rows int }
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		switch {
		case line.Read != nil:
			r.Files, r.Schema, r.Reader = line.Files, line.Schema, line.Reader
		case line.Row != nil:
			r.Rows = append(r.Rows, line.Row)
			r.Where = append(r.Where, line.File)
		case line.Error != nil:
			r.Error = *line.Error
		case line.End != nil:
			r.End = true
			if line.End.Rows != len(r.Rows) {
				t.Errorf("%s: %d rows, the end line says %d", path, len(r.Rows), line.End.Rows)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSparkReadsEveryOutput migrates a table holding every type rekey emits into Parquet and CSV
// outputs (one region; four regions sorted, in several files each; two shards into one folder,
// merged), runs Spark over each as bulkload.json configures the job (filePath, fileType, columns,
// header, delimiter) in one JVM, and checks that Spark lists exactly the data files the manifest
// names (no manifest, DDL or rejects read as data) and reads back every written row with the
// source's values, while the rows a format cannot carry are rejects that say why.
func TestSparkReadsEveryOutput(t *testing.T) {
	reader := sparkReader(t)
	dir := t.TempDir()
	rows := sparkRows()
	var ids []int64
	for id := range rows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	half := len(ids) / 2

	var outs []*sparkOutput
	for _, format := range []string{"parquet", "csv"} {
		isCSV := format == "csv"
		in, m := sparkInput(t, dir, format+".csv", rows, ids, !isCSV)
		inA, _ := sparkInput(t, dir, format+"-a.csv", rows, ids[:half], !isCSV)
		inB, _ := sparkInput(t, dir, format+"-b.csv", rows, ids[half:], !isCSV)
		for _, c := range []struct {
			name string
			args []string
		}{
			{"one-region", nil},
			{"four-regions-sorted", []string{"--regions", "4", "--sort", "--max-file-size", "4KiB"}},
		} {
			o := &sparkOutput{name: format + "-" + c.name, csv: isCSV, out: filepath.Join(dir, format+"-"+c.name), ids: ids}
			args := append([]string{"migrate", "-m", m, "--source", "file:" + in, "--out", o.out, "--format", format,
				"--progress", "never", "--max-rejects", "-1"}, c.args...)
			if code, stdout, stderr := runCLI(t, args...); code != 0 && code != exitRejects {
				t.Fatalf("%s: exit %d\n%s%s", o.name, code, stdout, stderr)
			}
			outs = append(outs, o)
		}
		// shards must share one region plan: explicit split points
		mb, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		split := writeFile(t, dir, format+"-split.yaml", string(mb)+"regions:\n  split_keys: [\"20\", \"1200\"]\n")
		o := &sparkOutput{name: format + "-shared-shards", csv: isCSV, out: filepath.Join(dir, format+"-shared"), ids: ids, merged: true}
		for i := range 2 {
			args := []string{"migrate", "-m", split, "--source", "file:" + inA + "," + inB, "--shard", fmt.Sprintf("%d/2", i), "--shared-out",
				"--out", o.out, "--format", format, "--progress", "never", "--max-rejects", "-1"}
			if code, stdout, stderr := runCLI(t, args...); code != 0 && code != exitRejects {
				t.Fatalf("%s shard %d: exit %d\n%s%s", o.name, i, code, stdout, stderr)
			}
		}
		mustRun(t, "merge", "--out", o.out)
		outs = append(outs, o)
	}

	// one JVM reads every output, each as its bulkload.json says; Parquet a second time with
	// Spark's row-based reader, the other path a job may take
	args := []string{"read"}
	for _, o := range outs {
		args = append(args, "--out", filepath.Join(dir, o.name+".jsonl"), "--job", filepath.Join(o.out, output.BulkloadFile))
	}
	for _, o := range slices.Clone(outs) {
		if !o.csv {
			row := *o
			row.name += "-row-reader"
			args = append(args, "--row-reader", "--out", filepath.Join(dir, row.name+".jsonl"), "--job", filepath.Join(o.out, output.BulkloadFile))
			outs = append(outs, &row)
		}
	}
	start := time.Now()
	cmd := exec.Command(reader, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	t.Logf("Spark read %d outputs in %s", len(outs), time.Since(start).Round(time.Second))
	if err != nil {
		// the per-output errors are checked below; a reader that did not start at all is not
		if _, statErr := os.Stat(filepath.Join(dir, outs[0].name+".jsonl")); statErr != nil {
			t.Fatalf("%s: %v\n%s", reader, err, stderr.String())
		}
	}

	for _, o := range outs {
		t.Run(o.name, func(t *testing.T) {
			checkSparkOutput(t, o, rows, readSparkLines(t, filepath.Join(dir, o.name+".jsonl")))
		})
	}
}

func checkSparkOutput(t *testing.T, o *sparkOutput, rows map[int64]sparkRow, got sparkRead) {
	t.Helper()
	man, err := outputtest.Manifest(o.out)
	if err != nil {
		t.Fatal(err)
	}
	job := readBulkloadJob(t, o.out)
	if got.Error != "" {
		t.Fatalf("Spark could not read %s as bulkload.json configures it (filePath %q): %s", o.out, job.ReaderConfig.FilePath, got.Error)
	}
	if want := map[bool]string{true: "row", false: "vectorized"}[strings.HasSuffix(o.name, "-row-reader")]; !o.csv && got.Reader != want {
		t.Errorf("Spark's Parquet reader %q, want %q", got.Reader, want)
	}
	// Spark lists exactly the data files: none missing (a region folder it does not descend
	// into), nothing else (manifest, ddl.sql, rejects, checkpoint, a shard's folder)
	var want []string
	for _, r := range man.Regions {
		for _, fe := range r.Files {
			want = append(want, "file://"+filepath.Join(o.out, filepath.FromSlash(fe.Path)))
		}
	}
	sort.Strings(want)
	files := slices.Clone(got.Files)
	sort.Strings(files)
	if !slices.Equal(files, want) {
		t.Errorf("Spark's listing of filePath %q:\n  %s\nmanifest.json's data files:\n  %s", job.ReaderConfig.FilePath,
			strings.Join(files, "\n  "), strings.Join(want, "\n  "))
	}
	if len(want) < 2 && !strings.Contains(o.name, "one-region") {
		t.Errorf("%d data files: this case is meant to spread rows over several files", len(want))
	}
	// the columns Spark sees: bulkload.json's, with the Lindorm type's Spark counterpart
	cols := map[string]sparkCol{}
	for _, c := range sparkCols {
		cols[c.name] = c
	}
	var names []string
	for _, c := range got.Schema {
		names = append(names, c.Name)
		if want := sparkTypeOf(cols[c.Name].sql); c.Type != want {
			t.Errorf("column %s: Spark reads %s, want %s (Lindorm %s)", c.Name, c.Type, want, cols[c.Name].sql)
		}
	}
	if !slices.Equal(names, job.WriterConfig.Columns) {
		t.Errorf("Spark's columns %v, bulkload.json's writer columns %v", names, job.WriterConfig.Columns)
	}

	// every row the output should hold, read back with the source's values
	wantIDs := map[int64]bool{}
	for _, id := range o.ids {
		r := rows[id]
		if r.anyReject == "" && (!o.csv || r.csvReject == "") {
			wantIDs[id] = true
		}
	}
	seen := map[int64]bool{}
	for i, row := range got.Rows {
		var id int64
		if err := json.Unmarshal(row["id"], &id); err != nil {
			t.Errorf("row %d (file %s): id %s: %v", i, got.Where[i], row["id"], err)
			continue
		}
		if seen[id] {
			t.Errorf("row %d read twice", id)
		}
		seen[id] = true
		src, ok := rows[id]
		if !ok || !wantIDs[id] {
			t.Errorf("row %d read, but the source has no such row or the output must reject it (%+v)", id, src)
			continue
		}
		for name, raw := range row {
			if name == "id" {
				continue
			}
			v, present := src.v[name]
			if msg := sparkValueMismatch(cols[name], v, present, raw); msg != "" {
				t.Errorf("row %d column %s (file %s): %s", id, name, got.Where[i], msg)
			}
		}
	}
	var missing []int64
	for id := range wantIDs {
		if !seen[id] {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("%d rows were not read by Spark, the first %v", len(missing), missing[:min(len(missing), 10)])
	}
	if int64(len(got.Rows)) != man.RowsWritten || man.RowsWritten != int64(len(wantIDs)) {
		t.Errorf("Spark read %d rows; the manifest says %d written; the source has %d the output can hold", len(got.Rows), man.RowsWritten, len(wantIDs))
	}
	if man.RowsIn != int64(len(o.ids)) || man.RowsIn != man.RowsWritten+man.RowsRejected {
		t.Errorf("counts: in %d written %d rejected %d; the source has %d rows", man.RowsIn, man.RowsWritten, man.RowsRejected, len(o.ids))
	}
	if o.merged {
		return // each shard keeps its own rejects; the counts above cover them
	}
	for _, line := range readLines(t, filepath.Join(o.out, output.RejectsFile)) {
		var rj output.Reject
		if err := json.Unmarshal([]byte(line), &rj); err != nil {
			t.Fatal(err)
		}
		id, _ := strconv.ParseInt(strings.SplitN(rj.Raw, ",", 2)[0], 10, 64)
		r := rows[id]
		why := r.anyReject
		if why == "" && o.csv {
			why = r.csvReject
		}
		if why == "" {
			t.Errorf("row %d rejected, the output should hold it: %s %s: %s", id, rj.Code, rj.Field, rj.Message)
		} else if !strings.Contains(rj.Message, "Spark") {
			t.Errorf("row %d (%s): the reject does not say what Spark would do: %s %s: %s", id, why, rj.Code, rj.Field, rj.Message)
		}
	}
}

func readBulkloadJob(t *testing.T, out string) lindorm.BulkloadJob {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, output.BulkloadFile))
	if err != nil {
		t.Fatal(err)
	}
	var job lindorm.BulkloadJob
	if err := json.Unmarshal(b, &job); err != nil {
		t.Fatal(err)
	}
	return job
}

// sparkTypeOf is the Spark type (simpleString) a Lindorm type reads as, from Parquet's logical
// types and from a typed CSV column alike.
func sparkTypeOf(sql string) string {
	switch {
	case strings.HasPrefix(sql, "DECIMAL"):
		return strings.ToLower(sql)
	case sql == "VARCHAR" || sql == "JSON":
		return "string"
	case sql == "INTEGER":
		return "int"
	case sql == "VARBINARY":
		return "binary"
	}
	return strings.ToLower(sql)
}

// sparkValueMismatch compares what Spark read (SparkRead.java's rendering) with the source's
// text of the value (present false: null); "" when they are the same value.
func sparkValueMismatch(c sparkCol, src string, present bool, raw json.RawMessage) string {
	if null := string(raw) == "null"; null || !present {
		if null != !present {
			return fmt.Sprintf("Spark read %s, the source holds %q (present %v)", raw, src, present)
		}
		return ""
	}
	fail := func() string { return fmt.Sprintf("Spark read %s, the source holds %q", raw, src) }
	var s string
	_ = json.Unmarshal(raw, &s) // text renderings; numbers leave s empty
	switch c.sql {
	case "VARCHAR", "JSON":
		if s != src {
			return fail()
		}
	case "VARBINARY":
		b, err := hex.DecodeString(strings.TrimPrefix(src, "0x"))
		if err != nil || s != base64.StdEncoding.EncodeToString(b) {
			return fail()
		}
	case "BIGINT", "INTEGER", "SMALLINT", "TINYINT", "TIMESTAMP":
		if string(raw) != src {
			return fail()
		}
	case "BOOLEAN":
		if string(raw) != src {
			return fail()
		}
	case "FLOAT", "DOUBLE":
		bits := 64
		if c.sql == "FLOAT" {
			bits = 32
		}
		text := s
		if text == "" {
			text = string(raw)
		}
		g, err1 := strconv.ParseFloat(text, bits)
		w, err2 := strconv.ParseFloat(src, bits)
		if err1 != nil || err2 != nil || !(math.Float64bits(g) == math.Float64bits(w) || math.IsNaN(g) && math.IsNaN(w)) {
			return fail()
		}
	case "DATE":
		if s != src {
			return fail()
		}
	default: // DECIMAL(p,s): the same number, at the column's scale
		g, ok1 := new(big.Rat).SetString(s)
		w, ok2 := new(big.Rat).SetString(src)
		_, frac, _ := strings.Cut(s, ".")
		if !ok1 || !ok2 || g.Cmp(w) != 0 || len(frac) != c.scale {
			return fail()
		}
	}
	return ""
}

// A CSV output of a table with a VARBINARY column is refused before anything is written (exit 2,
// naming the column and what to do): Lindorm's bulkload reads CSV with Spark, which takes a
// binary field as the bytes of its text, so the hex rekey wrote loaded as other bytes.
func TestMigrateCSVRefusesVarbinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := map[int64]sparkRow{1: {v: map[string]string{"s": "a", "bl": "0x00ff"}}}
	in, m := sparkInput(t, dir, "in.csv", rows, []int64{1}, true)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "migrate", "-m", m, "--source", "file:"+in, "--out", out, "--format", "csv", "--progress", "never")
	if code != exitUsage || !strings.Contains(stderr, `column "bl" is VARBINARY`) || !strings.Contains(stderr, "--format parquet") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, output.DataDir)); err == nil {
		t.Error("the refused run wrote data/")
	}
}

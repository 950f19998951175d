package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/sink/sinktest"
)

// The file source's records point into its read buffers, which are read into again once their
// batches are released: a command that kept a value's string past that would write, report or
// compare the bytes of a later chunk. Over an input many read buffers long whose values all
// differ, migrate (Parquet with a dictionary column, and CSV), report and verify must give back
// exactly the rows of the input.
const readBufferMapping = `version: 1
source:
  name: t.events
  columns: {id: text, seq: bigint, city: text, note: text}
target:
  table: events
  primary_key: "[id][seq]"
regions:
  count: 4
`

// readBufferReportMapping keys the same rows by city and id: the two rows of each id (and city)
// collide, so the report's examples name source rows, and its top values are the cities.
var readBufferReportMapping = strings.Replace(readBufferMapping, "[id][seq]", "[city][id]", 1)

const (
	readBufferRows   = 75000 // ~4.5 MB: 8 or more read buffers (of 512 KiB at least)
	readBufferFiles  = 75    // of one read buffer each
	readBufferCities = 100   // the dictionary column's distinct values: fewer than the report counts exactly
)

// readBufferRow is row i of the input: id and city shared by rows 2k and 2k+1, seq and note
// unique, notes of varying length so that no two chunks line up alike.
func readBufferRow(i int) (id string, seq int, city, note string) {
	id = fmt.Sprintf("u%06d-%x", i/2, (i/2)*2654435761%1000003)
	city = fmt.Sprintf("city-%03d", (i/2)%readBufferCities)
	note = fmt.Sprintf("note %d %s", i, strings.Repeat(string(rune('a'+i%26)), i%40))
	return id, i, city, note
}

func TestCommandsKeepNoValueOfAReleasedReadBuffer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want := make(map[string][]string, readBufferRows) // "id/seq" -> id, seq, city, note
	for i := range readBufferRows {
		id, seq, city, note := readBufferRow(i)
		want[id+"/"+strconv.Itoa(seq)] = []string{id, strconv.Itoa(seq), city, note}
	}
	// one file of 8 read buffers or more, and the same rows in files of one read buffer each,
	// read one after the other: each file's buffer comes from those of the files before it,
	// so a string kept past its batch reads a later file's bytes (the single file's buffers
	// are all still in flight when its last one is read)
	file := writeReadBufferInput(t, filepath.Join(dir, "one"), 1, nil)
	if st, err := os.Stat(file); err != nil || st.Size() < 8*(512<<10) {
		t.Fatalf("test bug: the input is not 8 read buffers long (%v)", err)
	}
	many := writeReadBufferInput(t, filepath.Join(dir, "many"), readBufferFiles, nil)
	mapping := writeFile(t, dir, "events.yaml", readBufferMapping)

	for _, src := range []string{file, many} {
		pqOut := filepath.Join(dir, "parquet-"+filepath.Base(filepath.Dir(src)))
		if code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+src, "--out", pqOut, "--progress", "never"); code != 0 {
			t.Fatalf("migrate %s to Parquet: exit %d\n%s%s", src, code, stdout, stderr)
		}
		checkReadBufferParquet(t, pqOut, mapping, want)
	}
	csvOut := filepath.Join(dir, "csv")
	if code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+many, "--out", csvOut, "--format", "csv", "--progress", "never"); code != 0 {
		t.Fatalf("migrate to CSV: exit %d\n%s%s", code, stdout, stderr)
	}
	checkReadBufferCSV(t, csvOut, want)

	checkReadBufferReport(t, dir, many)
	checkReadBufferVerify(t, dir, mapping, many, filepath.Join(dir, "parquet-one"))
}

// writeReadBufferInput writes the rows into files CSV files under dir (row i in file
// i*files/readBufferRows), each note passed through change when it is not nil, and returns the
// file, or the directory of several.
func writeReadBufferInput(t *testing.T, dir string, files int, change func(i int, note string) string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	per := readBufferRows / files
	for f := range files {
		var b strings.Builder
		b.WriteString("id,seq,city,note\n")
		for i := f * per; i < (f+1)*per; i++ {
			id, seq, city, note := readBufferRow(i)
			if change != nil {
				note = change(i, note)
			}
			fmt.Fprintf(&b, "%s,%d,%s,%s\n", id, seq, city, note)
		}
		path := writeFile(t, dir, fmt.Sprintf("part-%03d.csv", f), b.String())
		if files == 1 {
			return path
		}
	}
	return dir
}

// readBufferLine is the input row at a position of a file writeReadBufferInput wrote
// ("dir/part-007.csv:12"): line 1 is the header.
func readBufferLine(t *testing.T, pos string, files int) int {
	t.Helper()
	var f, line int
	if _, err := fmt.Sscanf(filepath.Base(pos), "part-%03d.csv:%d", &f, &line); err != nil {
		t.Fatalf("position %q: %v", pos, err)
	}
	return f*(readBufferRows/files) + line - 2
}

// checkReadBufferParquet reads every row of the Parquet output back: each input row once, its
// values its own, the city column dictionary-encoded.
func checkReadBufferParquet(t *testing.T, out, mapping string, want map[string][]string) {
	t.Helper()
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	schema := compileFile(t, mapping).Target()
	city := -1
	for c, col := range schema.Columns {
		if col.Name == "city" {
			city = c
		}
	}
	got := map[string]bool{}
	dict := 0
	for _, r := range m.Regions {
		for _, fe := range r.Files {
			pf, err := sinktest.ReadParquet(filepath.Join(out, filepath.FromSlash(fe.Path)), schema)
			if err != nil {
				t.Fatal(err)
			}
			for _, rg := range pf.Meta.Metadata().RowGroups {
				for _, e := range rg.Columns[city].MetaData.Encoding {
					if e == format.RLEDictionary {
						dict++
					}
				}
			}
			for _, vals := range pf.Values {
				row := map[string]string{}
				for c, col := range schema.Columns {
					row[col.Name] = vals[c].Str
					if col.Name == "seq" {
						row[col.Name] = strconv.FormatInt(vals[c].Num, 10)
					}
				}
				checkReadBufferRow(t, "parquet "+fe.Path, []string{row["id"], row["seq"], row["city"], row["note"]}, want, got)
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("the Parquet output holds %d rows, want %d", len(got), len(want))
	}
	if dict == 0 {
		t.Fatalf("the city column is not dictionary-encoded in any row group: the test does not check the dictionaries")
	}
}

// checkReadBufferCSV reads every row of the CSV output back (a header, then id,seq,city,note).
func checkReadBufferCSV(t *testing.T, out string, want map[string][]string) {
	t.Helper()
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range m.Regions {
		for _, fe := range r.Files {
			f, err := os.Open(filepath.Join(out, filepath.FromSlash(fe.Path)))
			if err != nil {
				t.Fatal(err)
			}
			recs, err := csv.NewReader(f).ReadAll()
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", fe.Path, err)
			}
			if len(recs) == 0 || strings.Join(recs[0], ",") != "id,seq,city,note" {
				t.Fatalf("%s: header %v", fe.Path, recs[:min(1, len(recs))])
			}
			for _, rec := range recs[1:] {
				checkReadBufferRow(t, "csv "+fe.Path, rec, want, got)
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("the CSV output holds %d rows, want %d", len(got), len(want))
	}
}

func checkReadBufferRow(t *testing.T, where string, row []string, want map[string][]string, got map[string]bool) {
	t.Helper()
	key := row[0] + "/" + row[1]
	w, ok := want[key]
	if !ok || got[key] {
		t.Fatalf("%s: row %q is not an input row, or is there twice", where, row)
	}
	if strings.Join(row, "\x00") != strings.Join(w, "\x00") {
		t.Fatalf("%s: row %q, want %q", where, row, w)
	}
	got[key] = true
}

// checkReadBufferReport: every pair of rows collides, the cities are the top values, each
// exactly as often as the input has it, and the collision examples name rows as the input has them.
func checkReadBufferReport(t *testing.T, dir, src string) {
	t.Helper()
	mapping := writeFile(t, dir, "events-report.yaml", readBufferReportMapping)
	jsonPath := filepath.Join(dir, "report.json")
	if code, stdout, stderr := runCLI(t, "report", "-m", mapping, "--source", "file:"+src, "--json", jsonPath, "--progress", "never"); code != exitReportErrors {
		t.Fatalf("report: exit %d, want %d (the collisions)\n%s%s", code, exitReportErrors, stdout, stderr)
	}
	r := readJSON[model.Report](t, jsonPath)
	u := r.Uniqueness
	if r.Totals.RowsAnalysed != readBufferRows || u.Keys != readBufferRows/2 || u.CollidingKeys != readBufferRows/2 || u.CollisionRows != readBufferRows/2 {
		t.Fatalf("report: %d rows, %d keys, %d colliding, %d collision rows; want %d rows, every pair of rows one key", r.Totals.RowsAnalysed, u.Keys, u.CollidingKeys, u.CollisionRows, readBufferRows)
	}
	if len(r.FirstColumn.Top) == 0 || !r.FirstColumn.TopExact {
		t.Fatalf("report: top values of the first key column %+v, want every city's exact count", r.FirstColumn.Top)
	}
	for _, top := range r.FirstColumn.Top {
		if n, err := strconv.Atoi(strings.TrimPrefix(top.Value, "city-")); err != nil || n >= readBufferCities || top.RowsMin != readBufferRows/readBufferCities {
			t.Fatalf("report: top value %q of %d rows, want a city of the input's %d rows", top.Value, top.RowsMin, readBufferRows/readBufferCities)
		}
	}
	if len(u.Examples) == 0 {
		t.Fatal("report: no collision examples")
	}
	for _, ex := range u.Examples {
		for _, o := range ex.Origins {
			id, _, city, _ := readBufferRow(readBufferLine(t, o.Position, readBufferFiles))
			if o.Values["id"] != id || o.Values["city"] != city || strings.Join(ex.Key, ",") != city+","+id {
				t.Fatalf("report: example key %q, row %s with %v; the input's row there has id %q, city %q", ex.Key, o.Position, o.Values, id, city)
			}
		}
	}
}

// checkReadBufferVerify: the Parquet output equals the input; against an input with every
// 997th note changed, exactly those rows differ, and the examples show the changed notes.
func checkReadBufferVerify(t *testing.T, dir, mapping, src, out string) {
	t.Helper()
	if code, stdout, stderr := runCLI(t, "verify", "-m", mapping, "--source", "file:"+src, "--target", out, "--progress", "never"); code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	changed := map[string]string{} // "id/seq" -> the changed note
	src2 := writeReadBufferInput(t, filepath.Join(dir, "changed"), readBufferFiles, func(i int, note string) string {
		if i%997 != 0 {
			return note
		}
		id, seq, _, _ := readBufferRow(i)
		note = "changed " + strconv.Itoa(i)
		changed[id+"/"+strconv.Itoa(seq)] = note
		return note
	})
	jsonPath := filepath.Join(dir, "verify.json")
	code, stdout, stderr := runCLI(t, "verify", "-m", mapping, "--source", "file:"+src2, "--target", out, "--json", jsonPath, "--progress", "never")
	r := readVerifyJSON(t, jsonPath)
	if code != exitDifferent || r.Differ != int64(len(changed)) || r.Missing != 0 || r.RowsRead != readBufferRows {
		t.Fatalf("verify of the changed input: exit %d, %d rows read, %d differ, %d missing; want %d differ\n%s%s", code, r.RowsRead, r.Differ, r.Missing, len(changed), stdout, stderr)
	}
	if len(r.Examples.Differ) == 0 {
		t.Fatal("verify: no examples of the rows that differ")
	}
	for _, ex := range r.Examples.Differ {
		key := map[string]string{}
		for _, c := range ex.Key {
			key[c.Column] = c.Value
		}
		note, ok := changed[key["id"]+"/"+key["seq"]]
		if !ok || len(ex.Columns) != 1 || ex.Columns[0].Column != "note" || ex.Columns[0].Source != note {
			t.Fatalf("verify: example %+v; the changed input has note %q there", ex, note)
		}
	}
}

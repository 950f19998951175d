package cassandra_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/migrate/runner"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// WRITETIMEs (microseconds) on either side of sinceMicros.
const (
	oldWrite    = int64(1_700_000_000_000_000) // 2023-11-14
	newWrite    = int64(1_800_000_000_000_000) // 2027-01-15
	sinceMicros = "1750000000000000"           // 2025-06-15, as epoch microseconds
)

// seedSince writes n rows in four kinds, by id % 4: 0 every cell older than since (skipped);
// 1 one cell older, one newer (kept: a cell was written since); 2 every cell newer (kept);
// 3 no regular cell at all (kept: it has no WRITETIME to date it by).
func seedSince(t testing.TB, c *cassandratest.Cluster, ks string, n int) {
	t.Helper()
	must(t, c.CreateTable(ks, "ev", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "a", Type: "text"},
		{Name: "b", Type: "int"}, {Name: "tags", Type: "set<text>"}}, []string{"id"}, nil))
	must(t, c.InsertMany(ks, "ev", n, func(i int, row map[string]any) error {
		row["id"] = i
		switch i % 4 {
		case 0:
			row["a"] = cqltest.Cell{Value: "old", WriteTime: oldWrite}
			row["b"] = cqltest.Cell{Value: i, WriteTime: oldWrite + 1}
		case 1:
			row["a"] = cqltest.Cell{Value: "old", WriteTime: oldWrite}
			row["b"] = cqltest.Cell{Value: i, WriteTime: newWrite}
		case 2:
			row["a"] = cqltest.Cell{Value: "new", WriteTime: newWrite}
			row["b"] = cqltest.Cell{Value: i, WriteTime: newWrite}
		}
		return nil
	}))
}

const sinceMapping = `
version: 1
source:
  name: since.ev
target:
  table: ev
  primary_key: "[id]"
  columns:
    a: a
    b: b
regions:
  count: 2
`

// TestSinceReadsOnlyRowsWrittenSince: with since=, rows whose every regular cell is older are
// read but give no record and count as skipped; rows with one newer cell and undated (key-only)
// rows are records; over pages and ranges, records + skipped = the table's rows.
func TestSinceReadsOnlyRowsWrittenSince(t *testing.T) {
	c := cassandratest.Open(t)
	const n = 400
	seedSince(t, c, "since", n)
	src := open(t, c, "since", "ev", "page_size=7&splits=8&since="+sinceMicros)
	batches, err := collect(context.Background(), src, nil)
	must(t, err)
	var skipped int64
	kept := map[int64]bool{}
	for _, b := range batches {
		skipped += b.Skipped
		for _, r := range b.Records {
			kept[r.Values[0].Num] = true
		}
	}
	for i := int64(0); i < n; i++ {
		if want := i%4 != 0; kept[i] != want {
			t.Errorf("row id=%d (kind %d): read=%v, want %v", i, i%4, kept[i], want)
		}
	}
	if skipped != n/4 || int64(len(kept))+skipped != n {
		t.Fatalf("%d records + %d skipped, want %d + %d", len(kept), skipped, n-n/4, n/4)
	}
	// the schema offered to mappings does not grow by the columns read to date rows
	if got := src.Schema().Names(); len(got) != 4 {
		t.Fatalf("schema %v, want the table's 4 columns", got)
	}
}

// TestSinceMigrationCountsSkippedAndResumes: the pipeline counts skipped rows apart (rows in =
// written + rejected + skipped), and an interrupted catch-up resumed reaches the same output
// and the same counts as one run straight through.
func TestSinceMigrationCountsSkippedAndResumes(t *testing.T) {
	c := cassandratest.Open(t)
	const n = 1000
	seedSince(t, c, "since", n)
	params := "page_size=20&splits=16&workers=2&since=2025-06-15T00:00:00Z"
	src := open(t, c, "since", "ev", params)
	prog := compile(t, src.Schema(), sinceMapping)
	clean := filepath.Join(t.TempDir(), "clean")
	res, err := migrate(t, src, prog, clean, runOpts{})
	must(t, err)
	check := func(res pipeline.Result) {
		t.Helper()
		// the undated rows are key-only: read (they cannot be dated), then rejected as key_only_row
		// (Lindorm cannot store a row of key columns only)
		if res.RowsIn != n || res.RowsSkipped != n/4 || res.RowsWritten != n/2 || res.RowsRejected != n/4 || res.RejectCodes[pipeline.CodeKeyOnlyRow] != n/4 {
			t.Fatalf("in %d, written %d, rejected %d %v, skipped %d; want %d, %d, %d key_only_row, %d",
				res.RowsIn, res.RowsWritten, res.RowsRejected, res.RejectCodes, res.RowsSkipped, n, n/2, n/4, n/4)
		}
	}
	check(res)
	cp, err := outputtest.Checkpoint(clean)
	must(t, err)
	if cp.RowsSkipped != n/4 {
		t.Fatalf("checkpoint rows_skipped %d, want %d", cp.RowsSkipped, n/4)
	}
	want := readOutput(t, clean, prog.Target(), cp.Plan)
	if len(want) != n/2 {
		t.Fatalf("output holds %d rows, want %d", len(want), n/2)
	}

	out := filepath.Join(t.TempDir(), "out")
	stop := make(chan struct{})
	_, err = migrate(t, &stopAfter{Source: open(t, c, "since", "ev", params), after: n / 3, stop: stop}, prog, out,
		runOpts{stop: stop, checkpointEvery: 5 * time.Millisecond})
	if !errors.Is(err, runner.ErrInterrupted) {
		t.Fatalf("interrupted run: %v", err)
	}
	res, err = migrate(t, open(t, c, "since", "ev", params), prog, out, runOpts{resume: true})
	must(t, err)
	check(res)
	cp, err = outputtest.Checkpoint(out)
	must(t, err)
	compareRows(t, readOutput(t, out, prog.Target(), cp.Plan), want)

	// a resume with another since would mix two catch-ups: refused
	other := open(t, c, "since", "ev", "page_size=20&splits=16&workers=2&since="+sinceMicros)
	if _, err := migrate(t, other, prog, out, runOpts{resume: true}); err == nil {
		t.Fatal("a resume with another since= was accepted")
	}
}

func TestParseSince(t *testing.T) {
	for in, want := range map[string]string{
		"2026-11-25T10:00:00Z":      "2026-11-25T10:00:00Z",
		"2026-11-25T11:00:00+01:00": "2026-11-25T10:00:00Z",
		"1795600800000":             "2026-11-25T10:00:00Z", // epoch ms
		"1795600800000000":          "2026-11-25T10:00:00Z", // epoch us
		"1795600800123456":          "2026-11-25T10:00:00.123456Z",
	} {
		got, err := cassandra.ParseSince(in)
		if err != nil || got.Format(time.RFC3339Nano) != want {
			t.Errorf("ParseSince(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-5", "yesterday", "2026-11-25"} {
		if _, err := cassandra.ParseSince(bad); err == nil {
			t.Errorf("ParseSince(%q) accepted", bad)
		}
	}
	if _, err := cassandra.ParseURI("cassandra://h/ks/t?since=soon"); err == nil {
		t.Error("a bad since= in the URI was accepted")
	}
	// epoch seconds read as milliseconds were a time in January 1970: a catch-up that copied
	// every row; refused, saying what the number would be in seconds and how to write it
	_, err := cassandra.ParseSince("1795600800")
	if want := "as seconds it is 2026-11-25T10:00:00Z: give since=1795600800000 (milliseconds) or since=2026-11-25T10:00:00Z"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("since in epoch seconds: %v, want an error saying %q", err, want)
	}
	// an offset written as it is in the URI: the query's + reads as a space, which no RFC 3339
	// time holds, so it is the offset's sign (%2B01:00 reads the same)
	for _, v := range []string{"2026-11-25T11:00:00+01:00", "2026-11-25T11:00:00%2B01:00", "2026-11-25T11:00:00.5+01:00"} {
		cfg, err := cassandra.ParseURI("cassandra://h/ks/t?since=" + v)
		if want := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC); err != nil || !cfg.Since.Truncate(time.Second).Equal(want) {
			t.Errorf("since=%s: %v, %v; want %s", v, cfg.Since, err, want)
		}
	}
	// a since in the future skipped every row and ended as a completed catch-up
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, v := range []string{future, strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10), strconv.FormatInt(time.Now().UnixNano(), 10)} {
		if _, err := cassandra.ParseURI("cassandra://h/ks/t?since=" + v); err == nil || !strings.Contains(err.Error(), "in the future") {
			t.Errorf("since=%s: %v, want it refused as in the future", v, err)
		}
	}
}

// TestSinceKeepsRowsWithUndatedCollections: a non-frozen collection has no WRITETIME() to date
// its row by (each element has its own), and one of its elements may have been written since
// while the row's other cells are older: a row holding one is kept, like a key-only row.
func TestSinceKeepsRowsWithUndatedCollections(t *testing.T) {
	c := cassandratest.Open(t)
	seedSince(t, c, "since", 8)
	must(t, c.InsertMany("since", "ev", 1, func(i int, row map[string]any) error {
		row["id"] = 100
		row["a"] = cqltest.Cell{Value: "old", WriteTime: oldWrite}
		row["tags"] = []string{"added since"}
		return nil
	}))
	src := open(t, c, "since", "ev", "since="+sinceMicros)
	batches, err := collect(context.Background(), src, nil)
	must(t, err)
	kept := map[int64]bool{}
	for _, b := range batches {
		for _, r := range b.Records {
			kept[r.Values[0].Num] = true
		}
	}
	if !kept[100] {
		t.Fatalf("the row with an old cell and a collection was skipped; kept %v", kept)
	}
	if kept[0] || kept[4] {
		t.Fatalf("rows whose every cell is older were kept: %v", kept)
	}
}

// TestRateCountsRowsOlderThanSince: --rate bounds the rows read from Cassandra, and a catch-up
// reads every row, the ones older than since= too: they count against the rate as the rows it
// keeps do (before, a catch-up of a table of older rows read it at full speed).
func TestRateCountsRowsOlderThanSince(t *testing.T) {
	c := cassandratest.Open(t)
	must(t, c.CreateTable("ratesince", "ev", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "a", Type: "text"}}, []string{"id"}, nil))
	must(t, c.InsertMany("ratesince", "ev", 3000, func(i int, row map[string]any) error {
		row["id"] = i
		row["a"] = cqltest.Cell{Value: "old", WriteTime: oldWrite}
		return nil
	}))
	start := time.Now()
	batches, err := collect(context.Background(), open(t, c, "ratesince", "ev", "splits=4&page_size=250&rate=6000&workers=4&since="+sinceMicros), nil)
	must(t, err)
	var skipped int64
	for _, b := range batches {
		skipped += b.Skipped
	}
	if skipped != 3000 {
		t.Fatalf("%d rows skipped, want 3000", skipped)
	}
	// 3000 rows read at 6000 rows/s: the first batch goes at once, the rest take >= 2750/6000 s
	if el := time.Since(start); el < 400*time.Millisecond {
		t.Errorf("3000 rows read (all older than since=) at 6000 rows/s took %v", el)
	}
}

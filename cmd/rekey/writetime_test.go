package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
	"github.com/rekey/rekey/source/file"
)

const writeTimeMapping = `version: 1
source:
  name: wt.cells
target:
  table: cells
  primary_key: "[id]"
  write_time: true
`

// target.write_time goes where a cell timestamp can be written, and is refused, saying why and
// what to do, where it cannot: the files of shards (one job per time slice, which shards and
// merge do not combine), replicate's files (a job stamps every cell with one timestamp),
// a MySQL table (no cell timestamps), a source without cell write times (a generator, a CSV
// file: only JSON Lines carry them, as verify --repair writes them); the write_time parameter
// of a SQL URI stays replicate's.
func TestWriteTimeRefusedWhereItCannotGo(t *testing.T) {
	cas := cassandratest.Open(t)
	if err := cas.CreateTable("wt", "cells", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "a", Type: "text"}}, []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cas.InsertMany("wt", "cells", 3, func(i int, row map[string]any) error {
		row["id"], row["a"] = i, fmt.Sprint("a", i)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", writeTimeMapping)
	plainMapping := writeFile(t, dir, "plain.yaml", strings.Replace(writeTimeMapping, "  write_time: true\n", "", 1))
	csv := writeFile(t, dir, "in.csv", "id,a\n1,x\n")
	fileMapping := writeFile(t, dir, "f.yaml", strings.Replace(writeTimeMapping, "  name: wt.cells\n", "  name: in\n  columns:\n    id: int\n    a: text\n", 1))
	source := cas.URI("wt", "cells", "")
	srv, _ := sqlServer(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
		code int // 0: exitUsage
	}{
		{"files of a shard", []string{"migrate", "-m", mapping, "--source", source, "--out", filepath.Join(dir, "out"), "--shard", "0/2"}, "shards (--shard, --shared-out) and rekey merge do not combine", 0},
		{"files of a shared output", []string{"migrate", "-m", mapping, "--source", source, "--out", filepath.Join(dir, "out"), "--shard", "1/2", "--shared-out"}, "run the migration without --shard", 0},
		{"time slices without write times", []string{"migrate", "-m", plainMapping, "--source", source, "--out", filepath.Join(dir, "out"), "--time-slice", "1h"}, "--time-slice applies only to a mapping with target.write_time", 0},
		{"time slices of a SQL table", []string{"migrate", "-m", mapping, "--source", source, "--out", "lindorm://u@127.0.0.1:1/db", "--time-slice", "1h"}, "--time-slice applies to bulk-load files", 0},
		{"mysql", []string{"migrate", "-m", mapping, "--source", source, "--out", srv.URI("")}, "a mysql row has none", 0},
		{"uri parameter", []string{"migrate", "-m", mapping, "--source", source, "--out", "lindorm://u@127.0.0.1:1/db?write_time=true"}, "it carries the cells' write times when the mapping says target.write_time", 0},
		{"csv file source", []string{"verify", "-m", fileMapping, "--source", "file:" + csv, "--target", srv.URI("")}, "only a JSON Lines file carries", exitVerifyFailed},
		{"gen source", []string{"migrate", "-m", fileMapping, "--source", "gen:orders?rows=1", "--out", "lindorm://u@127.0.0.1:1/db"}, "has none: read a cassandra:// table", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.code
			if want == 0 {
				want = exitUsage
			}
			code, out, errs := runCLI(t, tc.args...)
			if code != want || !strings.Contains(out+errs, tc.want) {
				t.Errorf("exit %d, want %d with %q\n%s%s", code, want, tc.want, out, errs)
			}
		})
	}
	// replicate carries the events' write times with it (as ?write_time=true does), into Lindorm
	kafkaMapping := writeFile(t, dir, "k.yaml", strings.Replace(writeTimeMapping, "  name: wt.cells\n", "  name: cdc.wt.cells\n  columns:\n    id: int\n    a: text\n", 1))
	for _, tc := range []struct{ name, source, out, want string }{
		{"replicate into files", "kafka://127.0.0.1:1/t?group=g&format=debezium", filepath.Join(dir, "rolls"), "one bulkload job stamping every cell with one timestamp"},
		{"replicate into mysql", "kafka://127.0.0.1:1/t?group=g&format=debezium", srv.URI(""), "a mysql row has none"},
		{"replicate of json", "kafka://127.0.0.1:1/t?group=g&format=json", "lindorm://u@127.0.0.1:1/db", "use format=debezium"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"replicate", "-m", kafkaMapping, "--source", tc.source, "--out", tc.out, "--progress", "never"}
			if !filepath.IsAbs(tc.out) { // a table's state folder: files have none
				args = append(args, "--state", filepath.Join(dir, "state"))
			}
			code, out, errs := runCLI(t, args...)
			if code != exitUsage || !strings.Contains(out+errs, tc.want) {
				t.Errorf("exit %d, want %d with %q\n%s%s", code, exitUsage, tc.want, out, errs)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("the refused migrate created its output")
	}
}

// A mapping with target.write_time is checked, and its CREATE TABLE printed, without a source,
// as any mapping is: which source will feed it is the migration's question.
func TestWriteTimeMappingCheckedWithoutSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", strings.Replace(writeTimeMapping, "  name: wt.cells\n", "  name: wt.cells\n  columns:\n    id: int\n    a: text\n", 1))
	for _, args := range [][]string{{"check", "-m", mapping}, {"ddl", "-m", mapping}} {
		if code, out, errs := runCLI(t, args...); code != 0 {
			t.Errorf("rekey %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
	}
}

// A Cassandra table's default_time_to_live becomes the Lindorm table's TTL in ddl.sql (with or
// without write times: without them the cells carry the load's time and the TTL counts from it).
func TestTableTTLInTheDDLRealNode(t *testing.T) {
	cas := cassandratest.Open(t)
	sess := cas.Session(t)
	for _, s := range []string{
		`CREATE KEYSPACE IF NOT EXISTS wt WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`DROP TABLE IF EXISTS wt.ttl`,
		`CREATE TABLE wt.ttl (id int PRIMARY KEY, a text) WITH default_time_to_live = 86400`,
		`INSERT INTO wt.ttl (id, a) VALUES (1, 'x')`,
	} {
		if err := sess.Query(s).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", strings.Replace(strings.Replace(writeTimeMapping, "wt.cells", "wt.ttl", 1), "  write_time: true\n", "", 1))
	out := filepath.Join(dir, "out")
	mustRun(t, "migrate", "-m", mapping, "--source", cas.URI("wt", "ttl", ""), "--out", out, "--progress", "never")
	ddl, err := os.ReadFile(filepath.Join(out, "ddl.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ddl), "TTL='86400'") {
		t.Errorf("ddl.sql has no TTL='86400':\n%s", ddl)
	}
	check := mustRun(t, "check", "-m", mapping, "--source", cas.URI("wt", "ttl", ""))
	if !strings.Contains(check, "TTL='86400'") || !strings.Contains(check, "TTL plan: 86400 s, counted by Lindorm from each cell's timestamp, the time the cell is written (no target.write_time)") {
		t.Errorf("check does not show the TTL and its plan:\n%s", check)
	}
	if ddl := mustRun(t, "ddl", "-m", mapping, "--source", cas.URI("wt", "ttl", "")); !strings.Contains(ddl, "TTL='86400'") {
		t.Errorf("rekey ddl --source has no TTL:\n%s", ddl)
	}
}

// verify --repair of a mapping with target.write_time writes, with each missing row, its cells'
// Cassandra write times (epoch ms: WRITETIME()'s microseconds floored), and the file source reads
// them back as the cells' times, so the migrate that applies the repair (its next step, into the
// table) writes each cell at its Cassandra write time as the copy did; a key column has none.
func TestVerifyRepairCarriesWriteTimes(t *testing.T) {
	cas := cassandratest.Open(t)
	if err := cas.CreateTable("wt", "rep", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "a", Type: "text"}, {Name: "b", Type: "int"}}, []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	const base = 1_700_000_000_000_000 // µs
	insert := func(from, n int) {
		t.Helper()
		if err := cas.InsertMany("wt", "rep", n, func(i int, row map[string]any) error {
			id := from + i
			row["id"] = id
			row["a"] = cqltest.Cell{Value: fmt.Sprint("a", id), WriteTime: base + int64(id)*1_000_999}
			row["b"] = cqltest.Cell{Value: id * 10, WriteTime: base + int64(id)*7_000_001}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	insert(0, 2)
	dir := t.TempDir()
	timed := strings.Replace(writeTimeMapping, "  name: wt.cells\n", "  name: wt.rep\n  columns:\n    id: int\n    a: text\n    b: int\n", 1)
	mapping := writeFile(t, dir, "m.yaml", timed)
	plain := writeFile(t, dir, "p.yaml", strings.Replace(timed, "  write_time: true\n", "", 1))
	source := cas.URI("wt", "rep", "")
	srv, conns := sqlServer(t)
	srv.Exec(t, mustRun(t, "ddl", "-m", plain, "--dialect", srv.DDLDialect()))
	mustRun(t, "migrate", "-m", plain, "--source", source, "--out", srv.URI(""), "--sql-conns", conns, "--state", filepath.Join(dir, "state"), "--progress", "never")
	insert(2, 3) // rows 2, 3, 4: missing from the table
	repair := filepath.Join(dir, "repair.jsonl")
	code, out, errs := runCLI(t, "verify", "-m", mapping, "--source", source, "--target", srv.URI(""), "--progress", "never", "--repair", repair)
	if code != exitDifferent || !strings.Contains(out, "3 source rows of the 3 keys missing or differing written to "+repair) {
		t.Fatalf("verify --repair: exit %d\n%s%s", code, out, errs)
	}
	data, err := os.ReadFile(repair)
	if err != nil {
		t.Fatal(err)
	}
	for id := 2; id <= 4; id++ {
		want := fmt.Sprintf(`"_rekey_write_times":{"a":%d,"b":%d}}`, (base+int64(id)*1_000_999)/1000, (base+int64(id)*7_000_001)/1000)
		if !strings.Contains(string(data), fmt.Sprintf(`{"id":%d,`, id)) || !strings.Contains(string(data), want) {
			t.Errorf("the repair file has no row %d with %s:\n%s", id, want, data)
		}
	}
	src, err := file.New(file.Config{Path: repair, Schema: pipeline.SourceSchema{{Name: "id", Type: "int"}, {Name: "a", Type: "text"}, {Name: "b", Type: "int"}}, CellWriteTimes: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64][]int64{}
	ch := make(chan pipeline.Batch, 4)
	go func() { src.Run(context.Background(), nil, ch); close(ch) }()
	for b := range ch {
		for _, r := range b.Records {
			if r.Err != nil {
				t.Errorf("the file source rejects a repair row: %v", r.Err)
				continue
			}
			got[r.Values[0].Num] = r.Times
		}
	}
	for id := int64(2); id <= 4; id++ {
		if want := []int64{0, (base + id*1_000_999) / 1000, (base + id*7_000_001) / 1000}; !slices.Equal(got[id], want) {
			t.Errorf("row %d read back with times %v, want %v", id, got[id], want)
		}
	}
	// a MySQL table has no cell timestamps: the next step says so, and applies the values
	if !strings.Contains(out, "which a mysql table does not have") || !strings.Contains(out, "rekey migrate -m MAPPING_WITHOUT_WRITE_TIME --source file:"+repair) {
		t.Errorf("verify does not say how to apply the repair to a mysql table:\n%s", out)
	}
}

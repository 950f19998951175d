package sqlsink

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/migrate/runner"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/transform"
)

// rejectsJournal keeps a run's rejects and saves no checkpoint.
type rejectsJournal struct {
	mu   sync.Mutex
	rejs []string
}

func (j *rejectsJournal) Reject(b *pipeline.Batch, r *pipeline.Record, stage string, e *pipeline.RowError) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.rejs = append(j.rejs, b.Position(r)+" "+stage+" "+e.Error())
	return nil
}
func (j *rejectsJournal) Cut(context.Context, *pipeline.Checkpoint) error { return nil }
func (j *rejectsJournal) RejectsName() string                             { return "rejects.jsonl" }

const timedMapping = `version: 1
source:
  name: ctime.cells
target:
  table: cells
  primary_key: "[id]"
`

// copyCells runs the pipeline from a Cassandra table into w, as migrate does.
func copyCells(t *testing.T, c *cassandratest.Cluster, mapping string, cellTimes bool, w pipeline.Sink) (*cassandra.Source, *transform.Program, pipeline.Result) {
	t.Helper()
	cfg, err := cassandra.ParseURI(c.URI("ctime", "cells", "splits=4&page_size=3"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.CellWriteTimes = cellTimes
	src, err := cassandra.New(context.Background(), cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	m, err := transform.Decode([]byte(mapping), "cells.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := transform.Compile(m, src.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if err := prog.TakeTableTTL(src.DefaultTTL()); err != nil {
		t.Fatal(err)
	}
	j := &rejectsJournal{}
	r, err := runner.New(runner.Config{Source: src, NewTransformer: func() runner.Transformer { return prog.NewEvaluator() },
		Target: prog.Target(), Plan: pipeline.RegionPlan{Type: prog.Target().Columns[0].Type}, Sink: w, Journal: j, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(j.rejs) > 0 {
		t.Fatalf("rejects: %s", strings.Join(j.rejs, "\n"))
	}
	return src, prog, res
}

// cellsProgram compiles mapping against ctime.cells as the node has it: the writer's schema is
// the program's, so the source is opened once to learn it.
func cellsProgram(t *testing.T, c *cassandratest.Cluster, mapping string) *transform.Program {
	t.Helper()
	m, err := transform.Decode([]byte(mapping), "cells.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := cassandra.ParseURI(c.URI("ctime", "cells", ""))
	if err != nil {
		t.Fatal(err)
	}
	probe, err := cassandra.New(context.Background(), cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	prog, err := transform.Compile(m, probe.Schema())
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

var upsertText = regexp.MustCompile(`^UPSERT (?:/\*\+ _l_ts_\((\d+)\) \*/ )?INTO cells \(([^)]*)\) VALUES \((.*)\)$`)

// Against the real Cassandra node: a table with a default_time_to_live, cells of several write
// times (two within one millisecond), cells written so long ago that the table's TTL counted from
// their write time has passed (one whole row of them), a cell with a TTL of its own, and a null.
// Copied with target.write_time through Lindorm's dialect, every cell is written with its
// Cassandra write time to the millisecond (cells of one millisecond in one statement), the
// expired cells are absent and counted, the expired row skipped and counted, the cells of
// another TTL counted (the expired ones too: Cassandra counts their TTL from the write, later than
// their timestamp), and the null written by no statement; the DDL's TTL is
// default_time_to_live. Copied into MariaDB (no cell timestamps there), the null leaves the
// table's value as it was: no delete.
func TestCopyCarriesCassandraTimeRealNode(t *testing.T) {
	c := cassandratest.Open(t)
	sess := c.Session(t)
	exec := func(stmts ...string) {
		t.Helper()
		for _, s := range stmts {
			if err := sess.Query(s).Exec(); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	exec(`CREATE KEYSPACE IF NOT EXISTS ctime WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`DROP TABLE IF EXISTS ctime.cells`,
		`CREATE TABLE ctime.cells (id int PRIMARY KEY, a text, b int, c text) WITH default_time_to_live = 3600`)
	now := time.Now().UnixMicro() / 1000 * 1000 // on a millisecond: +3 and +999 fall in the same one
	old := now - 2*3600*1_000_000               // past the table's TTL counted from the write time
	exec(
		fmt.Sprintf(`INSERT INTO ctime.cells (id, a, b) VALUES (1, 'a1', 1) USING TIMESTAMP %d`, now),
		fmt.Sprintf(`INSERT INTO ctime.cells (id, a) VALUES (2, 'a2') USING TIMESTAMP %d`, now+1),
		fmt.Sprintf(`UPDATE ctime.cells USING TIMESTAMP %d SET b = 2 WHERE id = 2`, old),
		fmt.Sprintf(`INSERT INTO ctime.cells (id, a, b) VALUES (3, 'a3', 3) USING TIMESTAMP %d`, old),
		fmt.Sprintf(`INSERT INTO ctime.cells (id, a) VALUES (4, 'a4') USING TIMESTAMP %d AND TTL 60`, now+2),
		fmt.Sprintf(`INSERT INTO ctime.cells (id, a) VALUES (5, 'a5') USING TIMESTAMP %d`, now+3),
		fmt.Sprintf(`UPDATE ctime.cells USING TIMESTAMP %d SET c = 'c5' WHERE id = 5`, now+999),
		fmt.Sprintf(`UPDATE ctime.cells USING TIMESTAMP %d SET b = 5 WHERE id = 5`, now+5000),
	)
	// the write times Cassandra reports, in milliseconds
	want := map[string]int64{}
	iter := sess.Query(`SELECT id, WRITETIME(a), WRITETIME(b), WRITETIME(c) FROM ctime.cells`).Iter()
	var id int
	var wa, wb, wc *int64
	for iter.Scan(&id, &wa, &wb, &wc) {
		for col, wt := range map[string]*int64{"a": wa, "b": wb, "c": wc} {
			if wt != nil && *wt > old { // the old cells are expired: no write
				want[fmt.Sprintf("%d.%s", id, col)] = *wt / 1000
			}
		}
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}

	mapping := timedMapping + "  write_time: true\n"
	p0 := cellsProgram(t, c, mapping)
	w, stmts := hookWriter(p0.Target(), true)
	src, prog, res := copyCells(t, c, mapping, true, w)

	t.Logf("statements:\n%s", strings.Join(*stmts, "\n"))
	got := map[string]int64{}
	for _, s := range *stmts {
		m := upsertText.FindStringSubmatch(s)
		if m == nil || m[1] == "" {
			t.Fatalf("statement without a cell timestamp: %s", s)
		}
		ts, _ := strconv.ParseInt(m[1], 10, 64)
		cols := strings.Split(m[2], ", ")
		for _, tuple := range strings.Split(m[3], "),(") {
			vals := strings.Split(tuple, ",")
			for i, col := range cols[1:] {
				if strings.EqualFold(vals[i+1], "NULL") {
					t.Errorf("a NULL written: %s", s)
				}
				k := vals[0] + "." + col
				if _, dup := got[k]; dup {
					t.Errorf("cell %s written twice", k)
				}
				got[k] = ts
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("cell timestamps written\n %v\nwant (Cassandra's write times in ms, expired cells left out)\n %v", got, want)
	}
	// a row's cells of one millisecond share a statement: 5.a and 5.c one, 5.b another (how the
	// rows of one write time share statements depends on which batches the node's token ranges
	// put them in, which its random tokens decide)
	var five []string
	for _, s := range *stmts {
		if strings.Contains(s, "VALUES (5,") || strings.Contains(s, "),(5,") {
			five = append(five, s)
		}
	}
	if len(five) != 2 {
		t.Errorf("%d statements for row 5, want 2 (a and c in one millisecond, b in another):\n%s", len(five), strings.Join(five, "\n"))
	}
	st := src.CellTimeStats()
	// 2.b, 3.a and 3.b, written now at an old timestamp, have the table's TTL counted by Cassandra
	// from now: it holds them an hour more, the target hides them already
	if st.ExpiredCells != 3 || st.ExpiredRows != 1 || st.OtherTTL != 4 || st.OtherTTLLeftOut != 3 {
		t.Errorf("cell stats %+v, want 3 expired cells (2.b, 3.a, 3.b), 1 expired row (3), 4 cells of another TTL (4.a and the expired ones), 3 of them left out", st)
	}
	if res.RowsIn != 5 || res.RowsWritten != 4 || res.RowsSkipped != 1 || res.RowsRejected != 0 {
		t.Errorf("rows in %d, written %d, skipped %d, rejected %d; want 5, 4, 1, 0", res.RowsIn, res.RowsWritten, res.RowsSkipped, res.RowsRejected)
	}
	ddl, err := lindorm.DDL(prog.Target(), pipeline.RegionPlan{Type: prog.Target().Columns[0].Type}, prog.Options())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ddl, "TTL='3600'") {
		t.Errorf("the DDL has not the table's default_time_to_live as its TTL:\n%s", ddl)
	}

	// into MariaDB, without cell timestamps: the nulls of the copy leave the table's values
	t.Run("mysql", func(t *testing.T) {
		srv := servers(t)["mariadb"]
		if srv == nil {
			srv = servers(t)["gms"]
		}
		db := srv(t)
		db.Exec(t, "CREATE TABLE cells (id int NOT NULL PRIMARY KEY, a varchar(100), b int, c varchar(100))",
			"INSERT INTO cells VALUES (1, 'x', 0, 'kept'), (4, 'x', 4, 'kept4')")
		mw := openWriter(t, db, p0.Target(), 2)
		_, _, res := copyCells(t, c, timedMapping, false, mw)
		if res.RowsWritten != 5 {
			t.Errorf("%d rows written, want 5 (no write times: nothing is judged expired)", res.RowsWritten)
		}
		var c1, c4, c5 string
		if err := db.DB(t).QueryRow("SELECT COALESCE((SELECT c FROM cells WHERE id=1),'NULL'), COALESCE((SELECT c FROM cells WHERE id=4),'NULL'), COALESCE((SELECT c FROM cells WHERE id=5),'NULL')").Scan(&c1, &c4, &c5); err != nil {
			t.Fatal(err)
		}
		if c1 != "kept" || c4 != "kept4" || c5 != "c5" {
			t.Errorf("c of rows 1, 4, 5: %s %s %s; want kept kept4 c5 (a null in the copy deletes nothing)", c1, c4, c5)
		}
	})
}

// Against the real Cassandra node: cells written USING TIMESTAMP 0 (what applications write so
// that every later write wins) and within Cassandra's first millisecond keep a time of their own
// in the copy, Lindorm's first millisecond, which every later write still beats. Carried as no
// time at all, they were stamped with the target's clock and beat the changes replicated after.
func TestCopyKeepsFirstMillisecondWritesRealNode(t *testing.T) {
	c := cassandratest.Open(t)
	sess := c.Session(t)
	for _, s := range []string{
		`CREATE KEYSPACE IF NOT EXISTS ctime WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`DROP TABLE IF EXISTS ctime.cells`,
		`CREATE TABLE ctime.cells (id int PRIMARY KEY, a text, b int, c text)`,
		`INSERT INTO ctime.cells (id, a) VALUES (1, 'a1') USING TIMESTAMP 0`,
		`INSERT INTO ctime.cells (id, a) VALUES (2, 'a2') USING TIMESTAMP 999`,
		`INSERT INTO ctime.cells (id, a) VALUES (3, 'a3') USING TIMESTAMP 2000`,
	} {
		if err := sess.Query(s).Exec(); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	mapping := timedMapping + "  write_time: true\n"
	p0 := cellsProgram(t, c, mapping)
	w, stmts := hookWriter(p0.Target(), true)
	copyCells(t, c, mapping, true, w)
	got := map[string]string{}
	for _, s := range *stmts {
		m := upsertText.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("statement %s", s)
		}
		for _, tuple := range strings.Split(m[3], "),(") {
			got[strings.Split(tuple, ",")[0]] = m[1]
		}
	}
	if want := map[string]string{"1": "1", "2": "1", "3": "2"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("cell timestamps (ms) by id %v, want %v; statements:\n%s", got, want, strings.Join(*stmts, "\n"))
	}
}

package sqlsink

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink/lindormsql"
)

// lindorm://...?write_time=true writes each change with its write time as the cells' timestamp:
// Lindorm's hint right after the verb, UPSERT /*+ _l_ts_(ms) */ INTO, DELETE /*+ _l_ts_(ms) */
// FROM (hints go after the verb only: UPSERT INTO /*+ ... */ is ignored). MariaDB cannot run
// UPSERT: the text is pinned here.
func TestCellTimestampStatements(t *testing.T) {
	s := pipeline.TargetSchema{Table: "u", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "id", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "name", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "visits", Type: pipeline.TypeInteger, KeyPos: -1}}}
	st := newStatements(lindormsql.Dialect, s)
	row := []pipeline.Value{pipeline.Text("u1"), pipeline.Text("Ann"), pipeline.Int(2)}
	w := &Writer{cfg: Config{Target: &Target{Dialect: lindormsql.Dialect, CellTimestamps: true}}, st: st}
	const ts = 1700000000123

	tup, _ := st.appendRow(nil, row)
	full := string(st.upsert(nil, &st.full, [][]byte{tup}))
	set := []bool{true, false, true}
	ptup, _ := st.appendPartialRow(nil, row, set)
	sh := st.upsertShape(set)
	partial := string(st.upsert(nil, &sh, [][]byte{ptup}))
	key, _ := st.appendKeyEq(nil, row)
	kr := &pipeline.KeyRange{Start: pipeline.KeyBound{Vals: []pipeline.Value{pipeline.Text("a")}, Inclusive: true},
		End: pipeline.KeyBound{Vals: []pipeline.Value{pipeline.Text("m")}}}
	cond, rerr := st.appendRangeCond(nil, kr)
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, tc := range []struct{ stmt, want string }{
		{full, "UPSERT /*+ _l_ts_(1700000000123) */ INTO u (id, `name`, visits) VALUES ('u1','Ann',2)"},
		{partial, "UPSERT /*+ _l_ts_(1700000000123) */ INTO u (id, visits) VALUES ('u1',2)"},
		{st.deletes([][]byte{key})[0], "DELETE /*+ _l_ts_(1700000000123) */ FROM u WHERE id='u1'"},
		{st.deleteHead + string(cond), "DELETE /*+ _l_ts_(1700000000123) */ FROM u WHERE ((id>='a')) AND ((id<'m'))"},
	} {
		if got := w.withTimestamp(tc.stmt, ts); got != tc.want {
			t.Errorf("\n got %s\nwant %s", got, tc.want)
		}
	}
	// a change without a write time, or a target without write_time: the server's time
	if got := w.withTimestamp(full, 0); got != full {
		t.Errorf("no write time: %s", got)
	}
	w.cfg.Target.CellTimestamps = false
	if got := w.withTimestamp(full, ts); got != full {
		t.Errorf("without write_time: %s", got)
	}
}

// write_time is a lindorm:// parameter: a MySQL row has no cell timestamps, so mysql:// refuses
// it and says why; verify, which only reads, refuses it too.
func TestWriteTimeParameter(t *testing.T) {
	env := func(string) string { return "" }
	tg, err := ParseURI("lindorm://u@h:33060/db?write_time=true", env)
	if err != nil || !tg.CellTimestamps {
		t.Fatalf("lindorm: %v %+v", err, tg)
	}
	if _, err := ParseURI("mysql://u@h:3306/db?write_time=true", env); err == nil || !strings.Contains(err.Error(), "a MySQL row has none") {
		t.Errorf("mysql:// with write_time: %v", err)
	}
	if _, err := ParseURI("lindorm://u@h:33060/db?write_time=maybe", env); err == nil {
		t.Error("write_time=maybe accepted")
	}
	if _, err := OpenLookup(t.Context(), "lindorm://u@h:33060/db?write_time=true", pipeline.TargetSchema{}, env, 2); err == nil || !strings.Contains(err.Error(), "verify reads") {
		t.Errorf("verify with write_time: %v", err)
	}
}

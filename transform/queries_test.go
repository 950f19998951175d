package transform

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

const queriesYAML = `version: 1
source:
  columns: {device_id: text, ts: timestamp, seq: int, v: double}
target:
  table: readings
  primary_key: "[device_id][ts]"
%s`

// The mapping declares the queries the table serves (its access patterns); they are decoded
// strictly, names checked against the source columns.
func TestQueriesAreDecoded(t *testing.T) {
	m, err := Decode([]byte(fmt.Sprintf(queriesYAML, `queries:
  - {equal: [device_id], range: ts}
  - equal: [device_id, ts]
  - range: ts
  - {equal: [device_id], range: ts, order: newest_first}
  - {range: ts, order: oldest_first}
`)), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%q", m.Queries)
	if want := `["device_id = ? and ts range" "device_id = ? and ts = ?" "ts range" "device_id = ? and ts range, newest first" "ts range"]`; got != want {
		t.Errorf("queries %s, want %s", got, want)
	}
	if q := m.Queries[1]; len(q.Equal) != 2 || q.Equal[1] != "ts" || q.Range != "" {
		t.Errorf("query 1: %#v", q)
	}
	// not part of the fingerprint: they change nothing a migration writes
	m2, err := Decode([]byte(fmt.Sprintf(queriesYAML, "")), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p1, err1 := Compile(m, nil)
	p2, err2 := Compile(m2, nil)
	if err1 != nil || err2 != nil || p1.Fingerprint() != p2.Fingerprint() {
		t.Errorf("fingerprints differ or compile failed: %v %v", err1, err2)
	}
}

func TestQueriesProblems(t *testing.T) {
	me := decodeErr(t, fmt.Sprintf(queriesYAML, `queries:
  - {equal: [device], range: tss}
  - {equal: device_id}
  - {equal: [ts, ts]}
  - {equal: [ts], range: ts}
  - {}
  - {equal: [device_id], order: desc}
  - device_id
  - {equal: [device_id], order: newest_first}
  - {range: ts, order: [newest_first]}
`))
	wantProblems(t, me, [][2]string{
		{"queries[0].equal[0]", `"device" is not a source column (source columns: device_id, ts, seq, v)`},
		{"queries[0].range", `"tss" is not a source column`},
		{"queries[1].equal", "want a list of source columns"},
		{"queries[1]", "names no column"},
		{"queries[2]", `column "ts" is listed twice`},
		{"queries[3]", `"ts" is both in equal and the range`},
		{"queries[4]", "names no column"},
		{"queries[5].order", `want newest_first or oldest_first (the order the query reads its range column in), found "desc"`},
		{"queries[6]", "want a query"},
		{"queries[7]", "order: newest_first needs a range column"},
		{"queries[8].order", "want a single value"},
	})
	me = decodeErr(t, fmt.Sprintf(queriesYAML, "queries: {equal: [ts]}\n"))
	wantProblems(t, me, [][2]string{{"queries", "want a list of queries"}})
}

// A mapping without source.columns has its query columns checked when it is compiled against
// the source's schema.
func TestQueriesCheckedAgainstTheSource(t *testing.T) {
	m, err := Decode([]byte(`version: 1
source: {name: x}
target: {table: t, primary_key: "[a]"}
queries:
  - {equal: [a], range: b}
`), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(m, pipeline.SourceSchema{{Name: "a", Type: "text"}})
	if err == nil || !strings.Contains(err.Error(), `queries[0].range: "b" is not a source column (source columns: a)`) {
		t.Errorf("compile: %v", err)
	}
}

func TestKeyBuckets(t *testing.T) {
	m, err := Decode([]byte(`version: 1
source:
  columns: {ts: timestamp, host: text, n: int}
vars: {numBuckets: 16}
target:
  table: t
  primary_key: "[bucket][random(8) AS salt][ts][md5(host).substr(0,4) AS h][n % 3 AS m]"
  columns:
    bucket: ts % numBuckets
`), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(p.KeyBuckets()); got != "[16 8 0 0 3]" {
		t.Errorf("KeyBuckets %s", got)
	}
}

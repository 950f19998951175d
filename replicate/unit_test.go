package replicate

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
)

func TestTracker(t *testing.T) {
	tr := newTracker()
	a := tr.open(10)
	a.extend(19)
	b := tr.open(25) // a gap (compaction): contiguity is in fetch order
	b.extend(30)
	c := tr.open(31)
	if got := tr.done(b); got != -1 {
		t.Fatalf("a later span made %d committable before the first one", got)
	}
	if got := tr.done(a); got != 31 {
		t.Fatalf("committable %d, want 31 (after a and b)", got)
	}
	if got := tr.done(c); got != 32 {
		t.Fatalf("committable %d, want 32", got)
	}
}

func TestSegmentNames(t *testing.T) {
	n := SegmentName(2, 1234, 5678)
	if n != "p0002-0000000000001234-0000000000005678" {
		t.Fatal(n)
	}
	p, f, l, ok := ParseSegmentName(n + ".parquet")
	if !ok || p != 2 || f != 1234 || l != 5678 {
		t.Fatalf("%d %d %d %v", p, f, l, ok)
	}
	for _, bad := range []string{"part-00001.parquet", "p2-1-2.parquet", ".rekey-tmp-p0002-0000000000001234.parquet", "p0002-x-y.sql"} {
		if _, _, _, ok := ParseSegmentName(bad); ok {
			t.Errorf("%s parsed", bad)
		}
	}
	// names sort in offset order, and a segment's deletes after its upserts
	names := []string{SegmentName(1, 9, 99) + ".parquet", SegmentName(1, 9, 99) + ".sql", SegmentName(1, 100, 200) + ".csv"}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Errorf("%s sorts after %s", names[i-1], names[i])
		}
	}
}

func TestDeleteStatement(t *testing.T) {
	schema := pipeline.TargetSchema{Table: "order", KeyLen: 6, Columns: []pipeline.Column{
		{Name: "pk1", Type: pipeline.TypeVarchar, KeyPos: 0},
		{Name: "log-event", Type: pipeline.TypeBigint, KeyPos: 1},
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: 2},
		{Name: "d", Type: pipeline.TypeDate, KeyPos: 3},
		{Name: "x", Type: pipeline.TypeDouble, KeyPos: 4},
		{Name: "b", Type: pipeline.TypeVarbinary, KeyPos: 5},
		{Name: "v", Type: pipeline.TypeVarchar, KeyPos: -1},
	}}
	row := []pipeline.Value{pipeline.Text("it's"), pipeline.Int(-7), pipeline.Int(1700000000123), pipeline.Int(19000),
		pipeline.Float(math.Inf(1)), pipeline.Bytes("\x01\xff"), pipeline.Text("ignored")}
	got := string(newDeleteStmt(schema).append(nil, row))
	want := "DELETE FROM `order` WHERE pk1 = 'it''s' AND `log-event` = -7 AND ts = '2023-11-14 22:13:20.123' AND d = '2022-01-08' AND x = '+Inf' AND b = X'01ff';\n"
	if got != want {
		t.Fatalf("\n got %q\nwant %q", got, want)
	}
	if strings.Contains(got, "ignored") {
		t.Fatal("a non-key column in the WHERE")
	}
}

// TestLoadManifestRefusesPathsOutsideTheOutput: a crafted manifest.json of a replication output
// listing "../canary.parquet" (issue 9, item 13) was carried into every manifest written after
// it, for merge and the bulk load to follow; a restart now refuses it, naming the manifest.
func TestLoadManifestRefusesPathsOutsideTheOutput(t *testing.T) {
	for _, seg := range []string{
		`{"region":0,"partition":0,"first_offset":0,"roll_last_offset":9,"data":{"path":"../canary.parquet","rows":1,"bytes":1}}`,
		`{"region":0,"partition":0,"first_offset":0,"roll_last_offset":9,"deletes":{"path":"/etc/x.sql","statements":1,"bytes":1}}`,
	} {
		dir := t.TempDir()
		data := `{"regions":[],"replication":{"segments":[` + seg + `]}}`
		if err := os.WriteFile(filepath.Join(dir, lindorm.ManifestFile), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loadManifest(dir, nil, Replication{})
		if !errors.Is(err, pipeline.ErrUnsafePath) || !strings.Contains(err.Error(), filepath.Join(dir, lindorm.ManifestFile)) {
			t.Errorf("%s: %v", seg, err)
		}
	}
	dir := t.TempDir()
	good := `{"regions":[],"replication":{"segments":[{"region":1,"partition":0,"first_offset":0,"roll_last_offset":9,"data":{"path":"region-0001/p.parquet","rows":1,"bytes":1}}]}}`
	if err := os.WriteFile(filepath.Join(dir, lindorm.ManifestFile), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := loadManifest(dir, nil, Replication{}); err != nil || len(m.segs) != 1 {
		t.Errorf("a good manifest: %v", err)
	}
}

package output

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/store"
)

func TestRollNames(t *testing.T) {
	n := RollName(2, 1234, 5678)
	if n != "p0002-0000000000001234-0000000000005678" {
		t.Fatal(n)
	}
	p, f, l, ok := ParseRollName(n + ".parquet")
	if !ok || p != 2 || f != 1234 || l != 5678 {
		t.Fatalf("%d %d %d %v", p, f, l, ok)
	}
	for _, bad := range []string{"part-00001.parquet", "p2-1-2.parquet", ".rekey-tmp-p0002-0000000000001234.parquet", "p0002-x-y.sql"} {
		if _, _, _, ok := ParseRollName(bad); ok {
			t.Errorf("%s parsed", bad)
		}
	}
	if got := RollRejectsFile(2, 1234, 5678); got != "rejects/p0002-0000000000001234-0000000000005678.jsonl" {
		t.Errorf("RollRejectsFile = %s", got)
	}
	if got := RollFile(DeletesRegionDir(3), 2, 1234, 5678, RollDeletesExt); got != "deletes/region-0003/p0002-0000000000001234-0000000000005678.sql" {
		t.Errorf("RollFile = %s", got)
	}
	if !strings.HasPrefix(RollRejectsFile(2, 1234, 5678), RollRejectsPrefix(2)) || strings.HasPrefix(RollRejectsFile(12, 1234, 5678), RollRejectsPrefix(1)) {
		t.Error("RollRejectsPrefix does not tell a partition's rejects files")
	}
	// a file of a partition, committed or being written by any member, is the partition's
	pending := RollPendingName(2, 1234, "0badcafe", "parquet")
	if pending != "p0002-0000000000001234-0badcafe.parquet" || !strings.HasPrefix(pending, RollPartitionPrefix(2)) {
		t.Errorf("RollPendingName = %s", pending)
	}
	for _, name := range []string{n + ".parquet", store.TempPrefix + pending, store.TempPrefix + "p0002-0000000000001234.parquet"} {
		if p, ok := RollPartition(name); !ok || p != 2 {
			t.Errorf("RollPartition(%s) = %d, %v", name, p, ok)
		}
	}
	if _, ok := RollPartition("part-00001.parquet"); ok {
		t.Error("a migrate data file is a roll's")
	}
	// names sort in offset order, and a segment's deletes after its upserts
	names := []string{RollName(1, 9, 99) + ".parquet", RollName(1, 9, 99) + ".sql", RollName(1, 100, 200) + ".csv"}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Errorf("%s sorts after %s", names[i-1], names[i])
		}
	}
}

func TestFilePartition(t *testing.T) {
	for name, want := range map[string]int{
		"p0002-0000000000001234-0000000000005678.parquet": 2,
		"p0002-0000000000001234-0000000000005678.jsonl":   2,
		".rekey-tmp-p0013-0000000000001234-0a1b2c3d.sql":  13,
		".rekey-tmp-p10000-0000000000001234-0a1b2c3d.csv": 10000,
		".rekey-tmp-p0002-0000000000001234.parquet":       2,
		"p12345-0000000000001234-0000000000005678.csv":    12345,
		"part-00001.parquet":                              -1,
		"p2-1-2.parquet":                                  -1,
		".rekey-tmp-manifest.json":                        -1,
		".rekey-tmp-p2-x.sql":                             -1,
		"notes.txt":                                       -1,
	} {
		p, ok := RollPartition(name)
		if !ok {
			p = -1
		}
		if p != want {
			t.Errorf("%s: partition %d (%v), want %d", name, p, ok, want)
		}
	}
}

// TestRenameStaged: the renames a crash left after a roll's manifest are done once, a file
// renamed already is left as it is, one under neither name is an error, and a rename read from a
// manifest that would leave the file's folder is refused.
func TestRenameStaged(t *testing.T) {
	dir := t.TempDir()
	st, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	region := filepath.Join(dir, "data", "region-0000")
	if err := os.MkdirAll(region, 0o755); err != nil {
		t.Fatal(err)
	}
	name := RollFile(RegionDir(0), 1, 0, 9, "parquet")
	pending := RegionDir(0) + "/" + store.TempPrefix + RollPendingName(1, 0, "aaaaaaaa", "parquet")
	if err := os.WriteFile(filepath.Join(dir, pending), []byte("rows"), 0o644); err != nil {
		t.Fatal(err)
	}
	staged := []Staged{{Temp: pending, Name: name}}
	for i := 0; i < 2; i++ { // the second time: renamed already
		if err := RenameStaged(context.Background(), st, staged); err != nil {
			t.Fatal(err)
		}
		if data, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(data) != "rows" {
			t.Fatalf("%s: %q, %v", name, data, err)
		}
	}
	os.Remove(filepath.Join(dir, name))
	if err := RenameStaged(context.Background(), st, staged); err == nil || !strings.Contains(err.Error(), "a committed file is lost") {
		t.Errorf("a file under neither name: %v", err)
	}
	for _, bad := range []Staged{
		{Temp: "data/region-0001/" + store.TempPrefix + "p0001-x.parquet", Name: name},
		{Temp: RegionDir(0) + "/p0001-x.parquet", Name: name},
		{Temp: "../" + store.TempPrefix + "x", Name: "x"},
		{Temp: RegionDir(0) + "/" + store.TempPrefix + "x", Name: "data/region-0000/../../x"},
	} {
		if err := bad.Check(); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}

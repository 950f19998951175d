package merge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/merge"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// writeShard writes a complete shard sh of a shared output by hand: one data file of its own in
// region 0 (named as the shard's), its manifest, checkpoint (the shard of a generator) and DDL.
func writeShard(t *testing.T, out string, sh pipeline.Shard, complete bool) {
	t.Helper()
	root, err := store.NewLocal(out)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := output.ShardStore(root, sh)
	file := output.RegionDir(0) + "/" + output.ShardFilePrefix(sh) + "part-00000.parquet"
	if err := st.Put(ctx, file, []byte("data")); err != nil {
		t.Fatal(err)
	}
	schema := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{{Name: "id", Type: pipeline.TypeBigint, KeyPos: 0}}}
	m := output.NewManifest(schema, pipeline.RegionPlan{Type: pipeline.TypeBigint, Strategy: "single"}, "parquet", 0)
	m.MappingFingerprint = "fp"
	m.Regions[0].Files = []output.FileEntry{{Path: file, Rows: 1, Bytes: 4}}
	m.Regions[0].Rows, m.RowsIn, m.RowsWritten = 1, 1, 1
	cp := pipeline.Checkpoint{Fingerprint: "fp", Format: "parquet", Complete: complete,
		Source: pipeline.Identity{"gen": "orders", "rows": "10", "shard": sh.String()}}
	for name, v := range map[string]any{output.ManifestFile: m, output.CheckpointFile: cp} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, name, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Put(ctx, output.DDLFile, []byte("CREATE TABLE t (id BIGINT NOT NULL, PRIMARY KEY(id));\n")); err != nil {
		t.Fatal(err)
	}
}

// finishShards does what `rekey merge --out` does: read the shards, check, finish.
func finishShards(out string) (*merge.Result, error) {
	ctx := context.Background()
	st, err := store.NewLocal(out)
	if err != nil {
		return nil, err
	}
	inputs, err := merge.OpenShards(ctx, st)
	if err != nil {
		return nil, err
	}
	if err := merge.Check(inputs); err != nil {
		return nil, err
	}
	return merge.FinishShards(ctx, inputs, st, "test")
}

// The finishing step of a shared output refuses, before writing anything, whatever would make
// the bulk load read other rows than the shards': no shards, shards of two counts, a shard
// missing or not complete, two shards of one input, a file in data/ no shard lists or a listed
// one missing, and a shard's manifest listing another shard's file. Well-formed shards finish
// with their files listed where they lie.
func TestFinishShardsRefuses(t *testing.T) {
	two := func(t *testing.T) string {
		out := t.TempDir()
		writeShard(t, out, pipeline.Shard{Index: 0, Count: 2}, true)
		writeShard(t, out, pipeline.Shard{Index: 1, Count: 2}, true)
		return out
	}
	for _, c := range []struct {
		name, want string
		make       func(t *testing.T) string
	}{
		{"no shards", "holds no shards", func(t *testing.T) string { return t.TempDir() }},
		{"two counts", "shards of 2 and of 3", func(t *testing.T) string {
			out := two(t)
			writeShard(t, out, pipeline.Shard{Index: 2, Count: 3}, true)
			return out
		}},
		{"missing", "shard 1/2 missing", func(t *testing.T) string {
			out := t.TempDir()
			writeShard(t, out, pipeline.Shard{Index: 0, Count: 2}, true)
			return out
		}},
		{"not complete", "shard 1/2 is not complete", func(t *testing.T) string {
			out := t.TempDir()
			writeShard(t, out, pipeline.Shard{Index: 0, Count: 2}, true)
			writeShard(t, out, pipeline.Shard{Index: 1, Count: 2}, false)
			return out
		}},
		{"stray file", "no shard's manifest lists", func(t *testing.T) string {
			out := two(t)
			if err := os.WriteFile(filepath.Join(out, "data", "region-0000", "s0001-part-00001.parquet"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			return out
		}},
		{"missing file", "is missing", func(t *testing.T) string {
			out := two(t)
			if err := os.Remove(filepath.Join(out, "data", "region-0000", "s0001-part-00000.parquet")); err != nil {
				t.Fatal(err)
			}
			return out
		}},
		{"another shard's file", "which is not shard 1/2's", func(t *testing.T) string {
			out := two(t)
			replaceIn(t, filepath.Join(out, "shards", "0001-of-0002", output.ManifestFile), "s0001-", "s0000-")
			return out
		}},
		{"same input", "read the same source", func(t *testing.T) string {
			out := two(t)
			replaceIn(t, filepath.Join(out, "shards", "0001-of-0002", output.CheckpointFile), `"1/2"`, `"0/2"`)
			return out
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := c.make(t)
			_, err := finishShards(out)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
			if _, serr := os.Stat(filepath.Join(out, output.ManifestFile)); serr == nil {
				t.Errorf("refused (%v), but it wrote %s", err, output.ManifestFile)
			}
		})
	}
	out := two(t)
	res, err := finishShards(out)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range res.Manifest.Regions[0].Files {
		paths = append(paths, f.Path)
	}
	if got := fmt.Sprint(paths); got != "[data/region-0000/s0000-part-00000.parquet data/region-0000/s0001-part-00000.parquet]" || res.Manifest.RowsIn != 2 {
		t.Errorf("finished with %s, %d rows in", got, res.Manifest.RowsIn)
	}
}

// replaceIn edits the file p by hand: every old becomes new.
func replaceIn(t *testing.T, p, old, new string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(data), old, new)), 0o644); err != nil {
		t.Fatal(err)
	}
}

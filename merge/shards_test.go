package merge

import (
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
)

// A file read in byte ranges, one per shard, is read by every shard: merge accepts its disjoint
// ranges and still refuses two shards that read the same bytes of it, or one that read it whole.
func TestCheckShardsFileInDisjointRanges(t *testing.T) {
	shard := func(dir, sh string, ranges ...string) *Input {
		id := pipeline.Identity{"dir": "/data", "files": "1", "shard": sh, "file[big.jsonl].size": "300", "file[big.jsonl].modified": "t"}
		if len(ranges) > 0 {
			id["file[big.jsonl].range"] = ranges[0]
		}
		return &Input{Dir: dir, Checkpoint: &pipeline.Checkpoint{Source: id}}
	}
	for _, c := range []struct {
		name   string
		inputs []*Input
		want   string // "" accepted
	}{
		{"disjoint ranges", []*Input{shard("s0", "0/3", "0-100"), shard("s1", "1/3", "100-210"), shard("s2", "2/3", "210-300")}, ""},
		{"an empty range", []*Input{shard("s0", "0/3", "0-100"), shard("s1", "1/3", "100-100"), shard("s2", "2/3", "100-300")}, ""},
		{"overlapping ranges", []*Input{shard("s0", "0/3", "0-100"), shard("s1", "1/3", "90-210"), shard("s2", "2/3", "210-300")}, "s0 and s1 both read big.jsonl (bytes 0-100 and bytes 90-210)"},
		{"whole and a range", []*Input{shard("s0", "0/2"), shard("s1", "1/2", "100-300")}, "s0 and s1 both read big.jsonl (whole and bytes 100-300)"},
		{"a damaged range", []*Input{shard("s0", "0/2", "0-x"), shard("s1", "1/2", "100-300")}, `s0: the checkpoint's range of big.jsonl is "0-x"`},
	} {
		err := checkShards(c.inputs)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// Inputs that read Cassandra token ranges: every token read by one input only, the ring covered.
// Two inputs' ranges can overlap without being the same range (an unsharded run cuts the ring by
// its own cores, shards by 8): that is refused as a token read twice, naming both inputs.
func TestCheckShardRangesOverlapsOfUnequalRanges(t *testing.T) {
	in := func(dir string, ranges ...cassandra.Range) *Input {
		streams := map[string]pipeline.StreamState{}
		for _, r := range ranges {
			streams[r.Name()] = pipeline.StreamState{Done: true}
		}
		return &Input{Dir: dir, Checkpoint: &pipeline.Checkpoint{Streams: streams}}
	}
	lo, hi := int64(cassandra.MinToken), int64(cassandra.MaxToken)
	for _, c := range []struct {
		name   string
		inputs []*Input
		want   string // "" accepted
	}{
		{"a tiling", []*Input{in("s0", cassandra.Range{Start: lo, End: 0}), in("s1", cassandra.Range{Start: 0, End: hi})}, ""},
		{"the same range twice", []*Input{in("s0", cassandra.Range{Start: lo, End: 0}), in("s1", cassandra.Range{Start: lo, End: 0}, cassandra.Range{Start: 0, End: hi})},
			"s0 and s1 both read range(" + strconv.FormatInt(lo, 10) + ",0]"},
		{"unequal ranges overlapping", []*Input{in("whole", cassandra.Range{Start: lo, End: -100}, cassandra.Range{Start: -100, End: hi}),
			in("s0", cassandra.Range{Start: lo, End: -50}), in("s1", cassandra.Range{Start: -50, End: hi})},
			"whole and s0 both read tokens of range(" + strconv.FormatInt(lo, 10) + ",-100] and range(" + strconv.FormatInt(lo, 10) + ",-50]"},
		{"a gap", []*Input{in("s0", cassandra.Range{Start: lo, End: 0}), in("s1", cassandra.Range{Start: 10, End: hi})}, "tokens (0, 10] are in no range"},
	} {
		err := checkShardRanges(c.inputs)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// Runs of files that were not sharded are merged when they read different files: a run of a
// folder and a run of one file in it (or of a glob naming it) read that file twice, and merged
// its rows would be there twice. The files are compared where they lie, in folders and buckets.
func TestCheckRefusesAFileReadByTwoRuns(t *testing.T) {
	run := func(dir string, id pipeline.Identity) *Input {
		return &Input{Dir: dir, Manifest: &output.Manifest{}, Checkpoint: &pipeline.Checkpoint{Source: id}}
	}
	folder := run("all", pipeline.Identity{"dir": "/data", "files": "2", "file[a.csv].size": "10", "file[a.csv].modified": "t", "file[b.csv].size": "20", "file[b.csv].modified": "t"})
	for _, c := range []struct {
		name   string
		inputs []*Input
		want   string // "" accepted
	}{
		{"a folder and one of its files", []*Input{folder, run("one", pipeline.Identity{"file": "/data/a.csv", "size": "10", "modified": "t"})}, "all and one both read /data/a.csv"},
		{"a folder and a glob of it", []*Input{run("glob", pipeline.Identity{"dir": "/", "files": "1", "file[data/b.csv].size": "20", "file[data/b.csv].modified": "t"}), folder}, "glob and all both read /data/b.csv"},
		{"two objects of one bucket", []*Input{
			run("x", pipeline.Identity{"dir": "s3://b/in/", "files": "2", "file[a.jsonl].size": "10", "file[a.jsonl].etag": "e", "file[c.jsonl].size": "10"}),
			run("y", pipeline.Identity{"file": "s3://b/in/a.jsonl", "size": "10", "etag": "e"})}, "x and y both read s3://b/in/a.jsonl"},
		{"two files", []*Input{run("one", pipeline.Identity{"file": "/data/a.csv", "size": "10"}), run("two", pipeline.Identity{"file": "/data/b.csv", "size": "20"})}, ""},
		// an export rewritten at one path between two runs: other rows, told apart by size and time
		{"one path, rewritten between the runs", []*Input{folder, run("tuesday", pipeline.Identity{"file": "/data/a.csv", "size": "12", "modified": "u"})}, ""},
		{"one object, rewritten", []*Input{
			run("x", pipeline.Identity{"dir": "s3://b/in/", "files": "1", "file[a.jsonl].size": "10", "file[a.jsonl].etag": "e1"}),
			run("y", pipeline.Identity{"file": "s3://b/in/a.jsonl", "size": "10", "etag": "e2"})}, ""},
		{"disjoint parts of one file", []*Input{run("p", pipeline.Identity{"file": "/data/a.csv", "range": "0-5"}), run("q", pipeline.Identity{"file": "/data/a.csv", "range": "5-10"})}, ""},
	} {
		err := Check(c.inputs)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// A finished shared output of Cassandra shards keeps its token ranges in its shards'
// checkpoints: merged alone they cover the ring once, beside a whole run of the table every
// token is read twice.
func TestCheckSharedOutputOfCassandraShards(t *testing.T) {
	cp := func(ranges ...cassandra.Range) *pipeline.Checkpoint {
		streams := map[string]pipeline.StreamState{}
		for _, r := range ranges {
			streams[r.Name()] = pipeline.StreamState{Done: true}
		}
		return &pipeline.Checkpoint{Complete: true, Streams: streams, Source: pipeline.Identity{"table": "shop.orders"}}
	}
	lo, hi := int64(cassandra.MinToken), int64(cassandra.MaxToken)
	shared := &Input{Dir: "shared", Manifest: &output.Manifest{}, Shards: []*pipeline.Checkpoint{cp(cassandra.Range{Start: lo, End: 0}), cp(cassandra.Range{Start: 0, End: hi})}}
	whole := &Input{Dir: "whole", Manifest: &output.Manifest{}, Checkpoint: cp(cassandra.Range{Start: lo, End: -7}, cassandra.Range{Start: -7, End: hi})}
	if err := Check([]*Input{shared}); err != nil {
		t.Errorf("a finished shared output alone: %v", err)
	}
	if err := Check([]*Input{shared, whole}); err == nil || !strings.Contains(err.Error(), "shared and whole") {
		t.Errorf("a finished shared output beside a whole run of its table: %v, want both named", err)
	}
}

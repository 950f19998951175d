package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/source/kafka/kafkatest"
	"github.com/rekey/rekey/store"
)

// replicate --out refuses a folder holding a migration, finished or killed, naming what it
// holds, and leaves its files as they were: the manifest still lists the migration's data
// files, and migrate --resume finishes the killed one with all its rows.
func TestReplicateRefusesMigrationFolder(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "cli-refuse-migration", 2)
	c.Produce(t, topic, ordersMessages(20)...)
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	dir := t.TempDir()
	src := "gen:orders?rows=1000"
	finished, killed := filepath.Join(dir, "finished"), filepath.Join(dir, "killed")
	for _, out := range []string{finished, killed} {
		mustRun(t, "migrate", "-m", mapping, "--source", src, "--out", out, "--progress", "never")
	}
	// a run killed after its last checkpoint, before it wrote its manifest
	if err := os.Remove(filepath.Join(killed, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ out, want string }{
		{finished, "holds a finished migration"},
		{killed, "holds an interrupted migration"},
	} {
		before := snapshot(t, tc.out)
		sigs := make(chan os.Signal)
		done := make(chan struct{})
		var code int
		var stdout, stderr string
		go func() {
			defer close(done)
			code, stdout, stderr = cliRun{signals: sigs}.run(t, "replicate", "-m", mapping, "--source",
				"kafka://"+strings.Join(c.Brokers, ",")+"/"+topic+"?group=cli-refuse&format=json", "--out", tc.out, "--progress", "never")
		}()
		// a replicate that takes the folder runs until stopped: stop it once it wrote there
		wait.For(t, func() bool {
			select {
			case <-done:
				return true
			default:
				return !reflect.DeepEqual(snapshot(t, tc.out), before)
			}
		}, "replicate to refuse the folder or write into it")
		select {
		case <-done:
		default:
			interrupt(t, sigs, syscall.SIGTERM)
			<-done
			t.Fatalf("replicate --out %s: it wrote into a migration's folder:\n%s%s", tc.out, stdout, stderr)
		}
		if code != 2 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "replicate into a new --out directory") {
			t.Errorf("replicate --out %s: exit %d, want 2 with %q and what to do:\n%s%s", tc.out, code, tc.want, stdout, stderr)
		}
		if after := snapshot(t, tc.out); !reflect.DeepEqual(after, before) {
			t.Errorf("replicate --out %s changed the migration's files:\nbefore %v\nafter  %v", tc.out, before, after)
		}
	}
	mustRun(t, "migrate", "-m", mapping, "--source", src, "--out", killed, "--progress", "never", "--resume")
	if rows, _ := outputRows(t, killed); len(rows) != 1000 {
		t.Errorf("migrate --resume after the refusal: %d rows in the output, want 1000", len(rows))
	}
}

// migrate --out refuses a folder holding a replication, naming it, rather than suggesting
// --resume or --overwrite, neither of which applies.
//
// The refusal leaves the folder as it was: before, migrate first removed every temporary file in
// it, the open rolls of the replication's live members among them (their commits then failed) and
// the files of a committed roll that a kill left under their temporary names for the partition's
// next owner to rename (lost).
func TestMigrateRefusesReplicationFolder(t *testing.T) {
	out := t.TempDir()
	writeFile(t, out, "replicate.json", `{}`)
	writeFile(t, out, "manifest.json", `{}`)
	if err := os.MkdirAll(filepath.Join(out, "data", "region-0000"), 0o755); err != nil {
		t.Fatal(err)
	}
	open := writeFile(t, out, filepath.Join("data", "region-0000", ".rekey-tmp-p0001-0000000000000010-aaaaaaaa.parquet"), "rows")
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	for _, extra := range [][]string{nil, {"--resume"}, {"--overwrite"}} {
		args := append([]string{"migrate", "-m", mapping, "--source", "gen:orders?rows=10", "--out", out, "--progress", "never"}, extra...)
		code, stdout, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "holds a replication (rekey replicate: replicate.json)") || !strings.Contains(stderr, "migrate into a new --out directory") {
			t.Errorf("rekey %v: exit %d, want 2 naming the replication:\n%s%s", extra, code, stdout, stderr)
		}
		if _, err := os.Stat(open); err != nil {
			t.Fatalf("rekey %v removed a file of the replication: %v", extra, err)
		}
	}
}

// A shard that would join a shared output with another source, --regions or region plan than
// the shards already there is refused at its start, naming the difference; merge of separate
// shard outputs names the shard to run again and how it differs.
func TestShardOfAnotherMigrationRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	shared := filepath.Join(dir, "shared")
	migrate := func(out, rows string, shard string, extra ...string) (int, string) {
		args := append([]string{"migrate", "-m", mapping, "--source", "gen:orders?rows=" + rows, "--shard", shard, "--out", out, "--progress", "never"}, extra...)
		code, stdout, stderr := runCLI(t, args...)
		return code, stdout + stderr
	}
	if code, out := migrate(shared, "400", "0/3", "--regions", "4", "--shared-out"); code != 0 {
		t.Fatalf("shard 0/3: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		rows string
		args []string
		want string
	}{
		{"500", []string{"--regions", "4"}, "--source rows: 400 in shard 0/3, 500 here"},
		{"400", []string{"--regions", "8"}, "--regions: 4 in shard 0/3, 8 here"},
		{"400", nil, "region plan: 4 regions (hex_prefix) in shard 0/3, 16 regions (hex_prefix) here"},
	} {
		code, out := migrate(shared, c.rows, "1/3", append(c.args, "--shared-out")...)
		if code != 2 || !strings.Contains(out, c.want) || !strings.Contains(out, "run this shard as shard 0/3 ran") {
			t.Errorf("shard 1/3 rows=%s %v: exit %d, want 2 saying %q:\n%s", c.rows, c.args, code, c.want, out)
		}
		if data, _ := filepath.Glob(filepath.Join(shared, "data", "*", "s0001-*")); len(data) > 0 {
			t.Errorf("shard 1/3 rows=%s %v: refused, but wrote %v", c.rows, c.args, data)
		}
	}
	for _, sh := range []string{"1/3", "2/3"} {
		if code, out := migrate(shared, "400", sh, "--regions", "4", "--shared-out"); code != 0 {
			t.Fatalf("shard %s as shard 0/3 ran: exit %d\n%s", sh, code, out)
		}
	}
	mustRun(t, "merge", "--out", shared)

	var outs []string
	for i, rows := range []string{"400", "500", "400"} {
		out := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		if code, text := migrate(out, rows, fmt.Sprintf("%d/3", i), "--regions", "4"); code != 0 {
			t.Fatalf("shard %d/3: exit %d\n%s", i, code, text)
		}
		outs = append(outs, out)
	}
	code, stdout, stderr := runCLI(t, "merge", outs[0], outs[1], outs[2], "--out", filepath.Join(dir, "merged"))
	if want := "run " + outs[1] + " again as " + outs[0] + " ran"; code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "--source rows: 400 in the others, 500 in it") {
		t.Errorf("merge of a shard of another source: exit %d, want 2 saying %q and how it differs:\n%s%s", code, want, stdout, stderr)
	}
}

// Two merges into one --out at once: the second is refused while the first holds the output's
// lock (as migrate's), naming it; the first finishes the merge alone.
func TestConcurrentMergesLocked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	var shards []string
	for i := range 2 {
		out := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		mustRun(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=600", "--shard", fmt.Sprintf("%d/2", i), "--regions", "4", "--out", out, "--progress", "never")
		shards = append(shards, out)
	}
	merged := filepath.Join(dir, "merged")
	args := []string{"merge", shards[0], shards[1], "--out", merged}
	var codeB int
	var outB string
	// the second merge runs once the first has written its plan, before it places any file
	second := func(st store.Store) store.Store {
		return &afterPutLocal{Local: st.(*store.Local), name: output.MergePlanFile, do: func() {
			var stdout, stderr string
			codeB, stdout, stderr = runCLI(t, args...)
			outB = stdout + stderr
		}}
	}
	code, stdout, stderr := cliRun{wrapOut: second}.run(t, args...)
	if code != 0 {
		t.Fatalf("the first merge: exit %d\n%s%s", code, stdout, stderr)
	}
	if codeB != 2 || !strings.Contains(outB, "is in use by another rekey run") {
		t.Errorf("the second merge, while the first runs: exit %d, want 2 saying the output is in use:\n%s", codeB, outB)
	}
	if rows, _ := outputRows(t, merged); len(rows) != 600 {
		t.Errorf("the merged output holds %d rows, want 600", len(rows))
	}
}

// afterPutLocal runs do once, after the first Put of name: a seam between two steps of a run.
type afterPutLocal struct {
	*store.Local
	name string
	do   func()
	once sync.Once
}

func (s *afterPutLocal) Put(ctx context.Context, name string, data []byte) error {
	if err := s.Local.Put(ctx, name, data); err != nil {
		return err
	}
	if name == s.name {
		s.once.Do(s.do)
	}
	return nil
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/kafka/kafkatest"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// TestCLIChild is not a test: it runs the command line that REKEY_CLI_CHILD holds (JSON) in a
// process of its own, which the tests can SIGKILL.
func TestCLIChild(t *testing.T) {
	spec := os.Getenv("REKEY_CLI_CHILD")
	if spec == "" {
		t.Skip("the child process of the kill tests")
	}
	var args []string
	if err := json.Unmarshal([]byte(spec), &args); err != nil {
		t.Fatal(err)
	}
	if v := os.Getenv("REKEY_TEST_LOCK_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		output.LockTTL = d
	}
	inv := &invocation{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
		replicateHooks: killAtStep(os.Getenv(killAtEnv))}
	os.Exit(inv.run(context.Background(), args))
}

// startChild runs `rekey args...` in a child process; its output goes to out.
func startChild(t *testing.T, out *bytes.Buffer, env []string, args ...string) *exec.Cmd {
	t.Helper()
	spec, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCLIChild$")
	cmd.Env = append(append(os.Environ(), "REKEY_CLI_CHILD="+string(spec)), env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// To a real S3 server (versitygw), a replicate process is SIGKILLed while messages still arrive,
// once a roll's files are uploaded and before the manifest lists them; the same command run
// again waits for the killed process's lock to expire, removes what its uncommitted rolls
// uploaded, and continues. Stopped with SIGTERM, the prefix
// holds every message once (the data files read with parquet-go, an independent reader), the poison
// message rejected once, the manifest's counts a clean run's, and no object the manifest does not
// list.
func TestReplicateToObjectStoreKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	srv := startVersitygw(t)
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "cli-orders-s3", 2)
	msgs := ordersMessages(2000)
	root := filepath.Join(srv.Dir, s3test.Bucket, "repl")
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	session := "3s"
	if kafkatest.Real() {
		session = "6s"
	}
	args := []string{"replicate", "-m", mapping, "--source", "kafka://" + strings.Join(c.Brokers, ",") + "/" + topic + "?group=cli-s3&format=json",
		"--out", srv.URIFor("repl"), "--roll-interval", "150ms", "--progress", "never", "--session-timeout", session}
	env := []string{"REKEY_TEST_LOCK_TTL=3s", "TMPDIR=" + t.TempDir()}
	for k, v := range srv.Env {
		env = append(env, k+"="+v)
	}
	rowsIn := func() int64 {
		var m output.Manifest
		data, err := os.ReadFile(filepath.Join(root, output.ManifestFile))
		if err != nil || json.Unmarshal(data, &m) != nil {
			return 0
		}
		return m.RowsIn
	}

	// the first process kills itself once the sixth roll's files are uploaded, before the
	// manifest lists them: rolls committed before it, that one uploaded and uncommitted
	var out1 bytes.Buffer
	first := startChild(t, &out1, append(env, killAtEnv+"=staged:6"), args...)
	exited := make(chan struct{})
	go func() { first.Wait(); close(exited) }()
	killed := func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	}
	// messages keep arriving, 100 at a time once the last ones are committed, until the kill
	produced := 0
	for !killed() {
		if produced == len(msgs) {
			t.Fatalf("every message produced and committed, and no kill\n%s", out1.String())
		}
		c.Produce(t, topic, msgs[produced:produced+100]...)
		produced += 100
		wait.For(t, func() bool { return killed() || rowsIn() >= int64(produced) }, "the messages produced committed, or the kill")
	}
	if ws, ok := first.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the first process ended with %v, not at its kill point\n%s", first.ProcessState, out1.String())
	}
	killedAt := rowsIn()
	if killedAt == 0 || killedAt >= 2000 {
		t.Fatalf("killed with %d messages committed: the test needs a kill in the middle\n%s", killedAt, out1.String())
	}
	if _, err := os.Stat(filepath.Join(root, output.LockFile)); err != nil {
		t.Fatalf("the killed process left no lock: %v", err)
	}
	c.Produce(t, topic, msgs[produced:]...)

	var out2 bytes.Buffer
	second := startChild(t, &out2, env, args...)
	wait.For(t, func() bool {
		got := c.Committed(t, "cli-s3", topic, 2)
		return got[0] == 1000 && got[1] == 1000
	}, "the restarted replicate to commit every offset")
	second.Process.Signal(syscall.SIGTERM)
	// 1 when the poison message was among the messages this process read (the killed roll's)
	if err := second.Wait(); err != nil && second.ProcessState.ExitCode() != exitRejects {
		t.Fatalf("the restarted replicate: %v\n%s", err, out2.String())
	}
	t.Logf("killed with %d of 2000 messages committed; restarted:\n%s", killedAt, lastLines(out2.String(), 20))

	m := readReplication(t, root)
	checkSchema(t, "../../docs/schema/manifest.json", filepath.Join(root, output.ManifestFile))
	// ordersMessages: 2000 messages, 20 tombstones (DELETE statements), 1 poison
	var upserts int64
	for _, p := range m.Replication.Partitions {
		upserts += p.Upserts
		if p.NextOffset != 1000 {
			t.Errorf("partition %d: next offset %d, want 1000", p.Partition, p.NextOffset)
		}
	}
	if m.RowsIn != 2000 || m.RowsWritten != 1999 || m.RowsRejected != 1 || upserts != 1979 || m.Replication.Deletes != 20 {
		t.Errorf("manifest: in %d written %d rejected %d upserts %d deletes %d; a clean run: 2000 1999 1 1979 20",
			m.RowsIn, m.RowsWritten, m.RowsRejected, upserts, m.Replication.Deletes)
	}
	listed := map[string]bool{}
	schema := compileFile(t, mapping).Target()
	seen := map[string]bool{}
	for _, s := range m.Replication.Segments {
		if s.Deletes != nil {
			listed[s.Deletes.Path] = true
		}
		if s.Data == nil {
			continue
		}
		listed[s.Data.Path] = true
		pf, err := sinktest.ReadParquet(filepath.Join(root, filepath.FromSlash(s.Data.Path)), schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range pf.Rows {
			key := strings.Join(row[:2], "/")
			if seen[key] {
				t.Fatalf("row %s written twice", key)
			}
			seen[key] = true
		}
	}
	if len(seen) != 1979 {
		t.Errorf("%d distinct rows in the data files, want 1979", len(seen))
	}
	var rejects int
	for _, r := range m.Replication.Rejects {
		listed[r.Path] = true
		rejects += len(readLines(t, filepath.Join(root, filepath.FromSlash(r.Path))))
	}
	if rejects != 1 {
		t.Errorf("%d reject lines, want 1 (the poison message once)", rejects)
	}
	// every object of the prefix is the manifest's or the output's own (the lock is released)
	own := map[string]bool{output.ManifestFile: true, output.DDLFile: true, output.BulkloadFile: true, output.ReplicateStateFile: true}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if !listed[rel] && !own[rel] {
			t.Errorf("object %s is not in the manifest", rel)
		}
		return nil
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

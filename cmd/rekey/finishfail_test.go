package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// failPutLocal fails every Put of name: a store that stops taking writes at that step.
type failPutLocal struct {
	*store.Local
	name string
}

func (s *failPutLocal) Put(ctx context.Context, name string, data []byte) error {
	if name == s.name {
		return errors.New("disk full")
	}
	return s.Local.Put(ctx, name, data)
}

// A run whose rows are all committed and whose final files cannot be written fails, and still
// prints what it committed and where, and says that --resume writes the final files; it printed
// the store's error alone.
func TestMigrateFinalFilesFailedPrintsWhatItCommitted(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=500", "--out", out, "--progress", "never"}
	fail := func(st store.Store) store.Store {
		return &failPutLocal{Local: st.(*store.Local), name: output.ManifestFile}
	}
	code, stdout, stderr := cliRun{wrapOut: fail}.run(t, args...)
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitFailed, stdout, stderr)
	}
	if !strings.Contains(stdout, "Migration failed") || !strings.Contains(stdout, "rows written   500") || !strings.Contains(stdout, out) {
		t.Errorf("no summary of the 500 rows committed to %s:\nstdout:\n%s\nstderr:\n%s", out, stdout, stderr)
	}
	if !strings.Contains(stderr, "disk full") || !strings.Contains(stderr, "--resume") {
		t.Errorf("the error does not say what failed and to --resume:\n%s", stderr)
	}
	// --resume writes the final files from the checkpoint
	if code, stdout, stderr := runCLI(t, append(args, "--resume")...); code != 0 || !strings.Contains(stdout, "Migration summary") {
		t.Fatalf("--resume: exit %d\n%s%s", code, stdout, stderr)
	}
}

// failCompleteCheckpoint fails the save of a run's last checkpoint (complete): the run aborts and
// keeps what its earlier checkpoints committed.
type failCompleteCheckpoint struct{ *store.Local }

func (s *failCompleteCheckpoint) Put(ctx context.Context, name string, data []byte) error {
	if name == output.CheckpointFile && strings.Contains(string(data), `"complete": true`) {
		return errors.New("disk full")
	}
	return s.Local.Put(ctx, name, data)
}

// A run whose last checkpoint could not be saved keeps what its earlier checkpoints committed (the
// files of the last cut are no checkpoint's: --resume removes them and reads their rows again):
// its summary and --stats-json count that, and no more. Before, they counted the checkpoint that
// was never saved: "Migration failed (what was committed before the failure)", 500 rows written,
// 16 files, above a checkpoint of 0 rows and no file.
func TestFailedCheckpointSummaryIsWhatWasCommitted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "out"), filepath.Join(dir, "stats.json")
	fail := func(st store.Store) store.Store { return &failCompleteCheckpoint{st.(*store.Local)} }
	code, stdout, stderr := cliRun{wrapOut: fail}.run(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=500",
		"--out", out, "--progress", "never", "--stats-json", stats)
	if code != exitFailed || !strings.Contains(stdout, "Migration failed") {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitFailed, stdout, stderr)
	}
	var cp pipeline.Checkpoint
	if b, err := os.ReadFile(filepath.Join(out, output.CheckpointFile)); err != nil || json.Unmarshal(b, &cp) != nil {
		t.Fatalf("checkpoint: %v %s", err, b)
	}
	if cp.RowsWritten != 0 || len(cp.Files) != 0 {
		t.Fatalf("the test wants a failure that keeps nothing: a checkpoint of %d rows, %d files", cp.RowsWritten, len(cp.Files))
	}
	for _, want := range []string{"  rows in        0\n", "  rows written   0\n", "  files          0\n", "  bytes          0 B\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in the summary of a run that committed nothing:\n%s", want, stdout)
		}
	}
	var st runStats
	if b, err := os.ReadFile(stats); err != nil || json.Unmarshal(b, &st) != nil {
		t.Fatalf("stats: %v %s", err, b)
	}
	if st.RowsIn != 0 || st.RowsWritten != 0 || st.Files != 0 || st.Bytes != 0 {
		t.Errorf("--stats-json of a run that committed nothing: %+v", st)
	}
}

// The last progress line of a run that failed, and kept none of the rows it had read since its
// last saved checkpoint, shows what the run committed, as its summary does. Before, it showed
// every row read as written, and the bytes of files no checkpoint lists, above a summary of 0 rows
// written and 0 B.
func TestLastProgressLineOfAFailedRunIsWhatItCommitted(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	fail := func(st store.Store) store.Store { return &failCompleteCheckpoint{st.(*store.Local)} }
	code, stdout, stderr := cliRun{wrapOut: fail}.run(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=500",
		"--out", out, "--progress", "plain", "--progress-interval", "1h")
	if code != exitFailed || !strings.Contains(stdout, "rows written   0\n") || !strings.Contains(stdout, "bytes          0 B\n") {
		t.Fatalf("exit %d, want %d with a summary of nothing committed\n%s%s", code, exitFailed, stdout, stderr)
	}
	var last string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "migrating: ") {
			last = l
		}
	}
	if !strings.HasPrefix(last, "migrating: 0 rows read, 0 written, 0 rejected, ") || !strings.Contains(last, ", 0 B written, ") {
		t.Fatalf("the last progress line claims what the run did not commit: %q\n%s", last, stdout)
	}
}

package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
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

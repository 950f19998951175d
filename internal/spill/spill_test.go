package spill_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/internal/spill"
	"github.com/rekey/rekey/internal/spill/spilltest"
)

// New makes a private folder named by the pid; it removes the folders of its prefix whose
// process is gone, and leaves those of a live process and another prefix's alone.
func TestNewSweepsKilledRunsFolders(t *testing.T) {
	base := t.TempDir()
	killed := spilltest.Killed(t, base, "rekey-x-")
	live := spilltest.Folder(t, base, "rekey-x-", os.Getppid())
	other := spilltest.Killed(t, base, "rekey-y-")
	dir, err := spill.New(base, "rekey-x-", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(killed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the folder of a killed run is still there: %v", err)
	}
	for _, keep := range []string{live, other} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 || !strings.HasPrefix(filepath.Base(dir), fmt.Sprintf("rekey-x-%d-", os.Getpid())) {
		t.Fatalf("New made %s: %v, %v", dir, fi, err)
	}
	if err := spill.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Remove left %s: %v", dir, err)
	}
}

// TestNewLeavesTheFoldersOfAnotherMachine: a folder whose pid belongs to another machine or PID
// namespace (a --tmp shared over NFS, a /tmp two containers mount) is left alone, whether or not
// a process of that pid runs here: this machine cannot tell whether its run is alive. Before, a
// pid that did not run here meant a killed run, and the spill folder of a run going on elsewhere
// was removed under it.
func TestNewLeavesTheFoldersOfAnotherMachine(t *testing.T) {
	base := t.TempDir()
	dead := spilltest.Killed(t, base, "rekey-x-")                                                      // a pid that ran here and ended
	pid, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(filepath.Base(dead), "rekey-x-"), "-")[0]) // free here
	elsewhere := filepath.Join(base, fmt.Sprintf("rekey-x-%d-h00000000-123", pid))
	if err := os.MkdirAll(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := spill.New(base, "rekey-x-", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer spill.Remove(dir)
	if _, err := os.Stat(elsewhere); err != nil {
		t.Errorf("the folder of a run on another machine was removed: %v", err)
	}
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the folder of a run killed here is still there: %v", err)
	}
}

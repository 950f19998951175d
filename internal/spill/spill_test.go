package spill_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

package spill_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/internal/spill"
)

// New makes a private folder named by the pid; it removes the folders of its prefix whose
// process is gone, and leaves those of a live process, another prefix's and files alone.
func TestNewSweepsKilledRunsFolders(t *testing.T) {
	base := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	killed := filepath.Join(base, fmt.Sprintf("rekey-x-%d-123", dead.Process.Pid))
	live := filepath.Join(base, fmt.Sprintf("rekey-x-%d-456", os.Getppid()))
	other := filepath.Join(base, fmt.Sprintf("rekey-y-%d-789", dead.Process.Pid))
	for _, d := range []string{killed, live, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "part-000"), []byte("raw rows"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
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

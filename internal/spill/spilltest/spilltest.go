// Package spilltest leaves what a killed run leaves in a temporary folder, for the tests of the
// spill folder's users.
package spilltest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rekey/rekey/internal/spill"
)

// Killed makes base/<prefix><pid>-<tag>-123 (spill.Tag: this machine's) holding one private file, as a run of pid that was killed
// leaves it, pid being a process that has ended. It returns the folder.
func Killed(t testing.TB, base, prefix string) string {
	t.Helper()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	return Folder(t, base, prefix, dead.Process.Pid)
}

// Folder makes base/<prefix><pid>-<tag>-123 (spill.Tag: this machine's) holding one private
// file, as a run of pid leaves it.
func Folder(t testing.TB, base, prefix string, pid int) string {
	t.Helper()
	dir := filepath.Join(base, fmt.Sprintf("%s%d-%s-123", prefix, pid, spill.Tag()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "part-000"), []byte("raw rows"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Package spill is the temporary folder where a run spills rows it cannot hold in memory (the
// file sink's sort runs, report's collision check, verify's buckets). The files hold raw
// values (personal data, perhaps), so the folder is the owner's only (0700); it is named by the
// process id, so that a later run removes the folders of runs that were killed instead of
// letting raw rows pile up; the run that made it removes it (Remove).
package spill

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"go.uber.org/zap"
)

// New creates base/<prefix><pid>-<tag>-<random> (base "": the system's temporary folder; tag:
// Tag), after removing the folders of prefix under base whose process is gone. log (nil: none)
// says what was removed.
func New(base, prefix string, log *zap.Logger) (string, error) {
	if base == "" {
		base = os.TempDir()
	}
	if log == nil {
		log = zap.NewNop()
	}
	removeDead(base, prefix, log)
	dir, err := os.MkdirTemp(base, fmt.Sprintf("%s%d-%s-", prefix, os.Getpid(), Tag())) // 0700
	if err != nil {
		return "", err
	}
	return dir, nil
}

// Tag names where a folder's pid is one: this machine (its host name and boot) and this PID
// namespace (a container has its own). A folder of another tag is another machine's or
// container's (a --tmp shared over NFS, a /tmp two containers mount), whose pid this process
// cannot check: removeDead leaves it alone.
func Tag() string {
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	h := sha256.Sum256([]byte(host + "\x00" + strings.TrimSpace(string(boot)) + "\x00" + ns))
	return "h" + hex.EncodeToString(h[:4])
}

// Remove removes a folder New made, with whatever is left in it.
func Remove(dir string) error { return os.RemoveAll(dir) }

// removeDead removes the folders of prefix under base of processes that are gone (killed: a run
// that ends removes its own). A folder whose pid is alive is left alone, even if the pid was
// reused by another process since, and so is one of another machine or PID namespace (Tag).
// A folder named without a tag (an older rekey's) is judged by its pid alone.
func removeDead(base, prefix string, log *zap.Logger) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	tag := Tag()
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		digits, rest, _ := strings.Cut(rest, "-")
		if t, _, _ := strings.Cut(rest, "-"); strings.HasPrefix(t, "h") && t != tag {
			continue // another machine's or container's: its pid means nothing here
		}
		pid, err := strconv.Atoi(digits)
		if err != nil || pid <= 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		path := filepath.Join(base, e.Name())
		if err := os.RemoveAll(path); err != nil {
			log.Warn("could not remove the spill folder of a run that was killed", zap.String("dir", path), zap.Error(err))
			continue
		}
		log.Info("removed the spill folder of a run that was killed", zap.String("dir", path), zap.Int("pid", pid))
	}
}

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// Setup shared by the migrate, replicate and report commands.

// onInterrupt prints msg on w and calls first at the first Ctrl-C (or SIGTERM), and calls abort at the
// second. The returned function stops listening.
func (inv *invocation) onInterrupt(w io.Writer, msg string, first, abort func()) (stop func()) {
	sigs := inv.signals
	unsubscribe := func() {}
	if sigs == nil {
		own := make(chan os.Signal, 2)
		signal.Notify(own, os.Interrupt, syscall.SIGTERM)
		sigs = own
		unsubscribe = func() { signal.Stop(own) }
	}
	done := make(chan struct{})
	next := func() bool {
		select {
		case <-sigs:
			return true
		case <-done:
			return false
		}
	}
	go func() {
		if !next() {
			return
		}
		fmt.Fprintln(w, msg)
		first()
		if next() {
			abort()
		}
	}()
	return func() {
		unsubscribe()
		close(done)
	}
}

// estimatedRows is the source's row estimate for the progress bar, -1 when it has none.
func estimatedRows(src pipeline.Source) int64 {
	if sz, ok := src.(pipeline.Sizer); ok {
		return sz.EstimatedRows()
	}
	return -1
}

// parseSizeFlag parses a size flag ("512MiB"), naming the flag in its error.
func parseSizeFlag(flag, s string) (int64, error) {
	n, err := transform.ParseSize(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", flag, err)
	}
	return n, nil
}

// parseSize is parseSizeFlag for a size that must be positive.
func parseSize(flag, s string) (int64, error) {
	n, err := parseSizeFlag(flag, s)
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, fmt.Errorf("%s must be positive (a size such as 512MiB); leave %s out for its default", flag, flag)
	}
	return n, nil
}

// checkOutFolder fails (exit 3, as a folder that cannot be written fails a run) before the run
// a file a command writes at its end, flag's path, whose folder is not there: found only then, it
// would fail the run after all its work.
func checkOutFolder(flag, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return runFailed(fmt.Errorf("%s %s: %s is not a folder: give another path", flag, path, dir))
	case errors.Is(err, fs.ErrNotExist):
		return runFailed(fmt.Errorf("%s %s: the folder %s does not exist: create it (mkdir -p %s) or give another path", flag, path, dir, dir))
	}
	return nil
}

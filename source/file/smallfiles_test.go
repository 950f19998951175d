package file

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
)

// Opening a directory of many small files takes memory by their size, not a whole head buffer
// (64 KiB) each: New reads the head of a file smaller than that into a buffer of its size.
// Before, 10,000 files of one row each allocated 625 MiB of head buffers before reading a row,
// and a migrate of them peaked at 467 MiB (with --memory 128MiB, 155 MiB: past the budget).
func TestManySmallFilesOpenWithoutAHeadBufferEach(t *testing.T) {
	dir := t.TempDir()
	const files = 500
	for i := 0; i < files; i++ {
		put(t, dir, fmt.Sprintf("f%05d.csv", i), ordersHeader+ordersRows(i, i))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	src, err := Open(context.Background(), Spec{Path: filepath.Clean(dir)}, Config{Schema: ordersSchema}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / files; per > 16<<10 {
		t.Fatalf("opening %d files of one row allocated %d bytes a file", files, per)
	}
	if got := len(streamRows(runSource(t, src, nil))); got != files {
		t.Fatalf("%d streams read, want %d", got, files)
	}
}

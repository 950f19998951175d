// Package storetest is the conformance suite every store.Store runs: each guarantee store.go
// documents, checked the same way on a local folder and on a bucket.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rekey/rekey/store"
)

// Run runs the suite. newStore returns an empty store for each subtest (a new folder, a new
// prefix or bucket); it may register cleanups with t.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"InvisibleUntilCommit", invisibleUntilCommit},
		{"AbortLeavesNothing", abortLeavesNothing},
		{"EmptyObject", emptyObject},
		{"LargeObject", largeObject},
		{"PutReplacesAtomically", putReplacesAtomically},
		{"ListSortedRecursivePrefix", listSortedRecursivePrefix},
		{"RemoveIdempotent", removeIdempotent},
		{"MissingIsNotExist", missingIsNotExist},
		{"OpenReadAtRanges", openReadAtRanges},
		{"SweepRemovesUnfinished", sweepRemovesUnfinished},
		{"ConcurrentWriters", concurrentWriters},
		{"Location", location},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

var ctx = context.Background()

func payload(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func names(t *testing.T, s store.Store, prefix string) []string {
	t.Helper()
	infos, err := s.List(ctx, prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	out := []string{}
	for _, i := range infos {
		out = append(out, i.Name)
	}
	return out
}

func wantNames(t *testing.T, s store.Store, prefix string, want ...string) {
	t.Helper()
	got := names(t, s, prefix)
	if want == nil {
		want = []string{}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("List(%q) = %q, want %q", prefix, got, want)
	}
}

func wantMissing(t *testing.T, s store.Store, name string) {
	t.Helper()
	if _, err := s.Stat(ctx, name); !store.IsNotExist(err) {
		t.Fatalf("Stat(%q): %v, want an error wrapping ErrNotExist", name, err)
	}
	if _, err := s.Get(ctx, name); !store.IsNotExist(err) {
		t.Fatalf("Get(%q): %v, want an error wrapping ErrNotExist", name, err)
	}
	if r, err := s.Open(ctx, name); !store.IsNotExist(err) {
		if err == nil {
			r.Close()
		}
		t.Fatalf("Open(%q): %v, want an error wrapping ErrNotExist", name, err)
	}
}

func wantObject(t *testing.T, s store.Store, name string, data []byte) {
	t.Helper()
	got, err := s.Get(ctx, name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("Get(%q): %d bytes, not the %d written", name, len(got), len(data))
	}
	info, err := s.Stat(ctx, name)
	if err != nil {
		t.Fatalf("Stat(%q): %v", name, err)
	}
	if info.Name != name || info.Size != int64(len(data)) {
		t.Fatalf("Stat(%q) = %+v, want name %q size %d", name, info, name, len(data))
	}
	if d, ok := s.(store.Dir); ok {
		st, err := os.Stat(filepath.Join(d.Path(), filepath.FromSlash(name)))
		if err != nil || st.Size() != int64(len(data)) {
			t.Fatalf("Dir: %s is not a file of %d bytes under Path(): %v", name, len(data), err)
		}
	}
}

func write(t *testing.T, s store.Store, name string, data []byte) store.Writer {
	t.Helper()
	w, err := s.Create(ctx, name)
	if err != nil {
		t.Fatalf("Create(%q): %v", name, err)
	}
	// in pieces, as the sinks write
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 64<<10)
		if _, err := w.Write(rest[:n]); err != nil {
			t.Fatalf("Write(%q): %v", name, err)
		}
		rest = rest[n:]
	}
	return w
}

func commit(t *testing.T, w store.Writer, size int) {
	t.Helper()
	n, err := w.Commit(ctx)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if n != int64(size) {
		t.Fatalf("Commit returned size %d, want %d", n, size)
	}
}

func invisibleUntilCommit(t *testing.T, s store.Store) {
	name := "data/region-0000/part-00000.parquet"
	data := payload(1, 300<<10)
	w := write(t, s, name, data)
	wantNames(t, s, "")
	wantMissing(t, s, name)
	commit(t, w, len(data))
	wantNames(t, s, "", name)
	wantObject(t, s, name, data)
	if err := w.Abort(); err != nil { // a no-op after Commit
		t.Fatalf("Abort after Commit: %v", err)
	}
	wantObject(t, s, name, data)
}

func abortLeavesNothing(t *testing.T, s store.Store) {
	name := "data/region-0001/part-00003.csv"
	w := write(t, s, name, payload(2, 100<<10))
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort twice: %v", err)
	}
	wantNames(t, s, "")
	wantMissing(t, s, name)
	if err := s.Sweep(ctx, ""); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if d, ok := s.(store.Dir); ok {
		if left := filesUnder(t, d.Path()); len(left) > 0 {
			t.Fatalf("Abort left files in the folder: %q", left)
		}
	}
	// the name is free for a new writer
	data := payload(3, 10)
	commit(t, write(t, s, name, data), len(data))
	wantObject(t, s, name, data)
}

func emptyObject(t *testing.T, s store.Store) {
	commit(t, write(t, s, "a/empty", nil), 0)
	wantObject(t, s, "a/empty", []byte{})
	if err := s.Put(ctx, "b/empty", nil); err != nil {
		t.Fatalf("Put empty: %v", err)
	}
	wantObject(t, s, "b/empty", []byte{})
}

// largeObject is over two of a multipart upload's 5 MiB parts.
func largeObject(t *testing.T, s store.Store) {
	data := payload(4, 11<<20+123)
	w := write(t, s, "data/region-0000/big.parquet", data)
	wantMissing(t, s, "data/region-0000/big.parquet")
	commit(t, w, len(data))
	wantObject(t, s, "data/region-0000/big.parquet", data)
}

func putReplacesAtomically(t *testing.T, s store.Store) {
	name := "checkpoint.json"
	a, b := bytes.Repeat([]byte("a"), 256<<10), bytes.Repeat([]byte("b"), 200<<10)
	if err := s.Put(ctx, name, a); err != nil {
		t.Fatalf("Put: %v", err)
	}
	wantObject(t, s, name, a)
	if err := s.Put(ctx, name, b); err != nil {
		t.Fatalf("Put over: %v", err)
	}
	wantObject(t, s, name, b)
	// readers racing with replacements see one whole version or the other
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var putErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			data := a
			if i%2 == 1 {
				data = b
			}
			if err := s.Put(ctx, name, data); err != nil {
				putErr = err
				break
			}
		}
		close(stop)
	}()
	for reads := 0; ; reads++ {
		select {
		case <-stop:
			wg.Wait()
			if putErr != nil {
				t.Fatalf("Put: %v", putErr)
			}
			wantNames(t, s, "", name)
			return
		default:
		}
		got, err := s.Get(ctx, name)
		if err != nil {
			t.Fatalf("Get during Put: %v", err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("Get during Put saw %d bytes that are neither version", len(got))
		}
	}
}

func listSortedRecursivePrefix(t *testing.T, s store.Store) {
	objs := map[string]int{
		"b":                                   1,
		"a/x":                                 2,
		"a/y/z":                               3,
		"a-b":                                 4,
		"data/region-0001/part-00000.parquet": 5,
		"data/region-0000/part-00001.parquet": 6,
		"data/region-0000/part-00000.parquet": 7,
		"manifest.json":                       8,
	}
	for name, n := range objs {
		if err := s.Put(ctx, name, payload(int64(n), n*10)); err != nil {
			t.Fatalf("Put(%q): %v", name, err)
		}
	}
	wantNames(t, s, "", "a-b", "a/x", "a/y/z", "b",
		"data/region-0000/part-00000.parquet", "data/region-0000/part-00001.parquet", "data/region-0001/part-00000.parquet",
		"manifest.json")
	wantNames(t, s, "a/", "a/x", "a/y/z")
	wantNames(t, s, "a", "a-b", "a/x", "a/y/z")
	wantNames(t, s, "data/", "data/region-0000/part-00000.parquet", "data/region-0000/part-00001.parquet", "data/region-0001/part-00000.parquet")
	wantNames(t, s, "data/region-0000/", "data/region-0000/part-00000.parquet", "data/region-0000/part-00001.parquet")
	wantNames(t, s, "data/region-0000/part-00001", "data/region-0000/part-00001.parquet")
	wantNames(t, s, "nothing/")
	wantNames(t, s, "zzz")
	infos, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Size != int64(objs[info.Name]*10) {
			t.Fatalf("List: %s has size %d, want %d", info.Name, info.Size, objs[info.Name]*10)
		}
	}
	// an open writer is not listed
	w := write(t, s, "a/open", []byte("x"))
	wantNames(t, s, "a/", "a/x", "a/y/z")
	w.Abort()
}

func removeIdempotent(t *testing.T, s store.Store) {
	for _, n := range []string{"x/1", "x/2", "y"} {
		if err := s.Put(ctx, n, []byte(n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Remove(ctx, "x/1", "missing", "x/nothing/here"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	wantNames(t, s, "", "x/2", "y")
	wantMissing(t, s, "x/1")
	if err := s.Remove(ctx, "x/1"); err != nil {
		t.Fatalf("Remove again: %v", err)
	}
	if err := s.Remove(ctx); err != nil {
		t.Fatalf("Remove nothing: %v", err)
	}
	if err := s.Remove(ctx, "x/2", "y"); err != nil {
		t.Fatal(err)
	}
	wantNames(t, s, "")
	// a removed name can be written again
	if err := s.Put(ctx, "x/1", []byte("again")); err != nil {
		t.Fatal(err)
	}
	wantObject(t, s, "x/1", []byte("again"))
}

func missingIsNotExist(t *testing.T, s store.Store) {
	wantMissing(t, s, "checkpoint.json")
	wantMissing(t, s, "data/region-0000/part-00000.parquet")
	if err := s.Put(ctx, "data/region-0000/part-00000.parquet", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// a "folder" is not an object
	wantMissing(t, s, "data/region-0000")
	wantMissing(t, s, "data")
}

func openReadAtRanges(t *testing.T, s store.Store) {
	data := payload(5, 1<<20+17)
	name := "data/region-0000/part-00000.parquet"
	commit(t, write(t, s, name, data), len(data))
	r, err := s.Open(ctx, name)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	if r.Size() != int64(len(data)) {
		t.Fatalf("Size() = %d, want %d", r.Size(), len(data))
	}
	for _, rg := range [][2]int{{0, 4}, {0, 100}, {len(data) - 8, 8}, {len(data) - 4, 4}, {500_000, 70_000}, {123, 1}} {
		buf := make([]byte, rg[1])
		n, err := r.ReadAt(buf, int64(rg[0]))
		if n != rg[1] || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v", rg[1], rg[0], n, err)
		}
		if !bytes.Equal(buf, data[rg[0]:rg[0]+rg[1]]) {
			t.Fatalf("ReadAt(%d bytes at %d) read other bytes", rg[1], rg[0])
		}
	}
	// past the end: what there is, and io.EOF
	buf := make([]byte, 100)
	n, err := r.ReadAt(buf, int64(len(data)-10))
	if n != 10 || err != io.EOF || !bytes.Equal(buf[:10], data[len(data)-10:]) {
		t.Fatalf("ReadAt over the end = %d, %v; want 10, io.EOF", n, err)
	}
	// the Parquet footer read: a section reader over the whole object
	sr := io.NewSectionReader(r, 0, r.Size())
	all, err := io.ReadAll(sr)
	if err != nil || !bytes.Equal(all, data) {
		t.Fatalf("reading the whole object through ReadAt: %d bytes, %v", len(all), err)
	}
}

func sweepRemovesUnfinished(t *testing.T, s store.Store) {
	done := payload(6, 1000)
	if err := s.Put(ctx, "data/region-0000/part-00000.parquet", done); err != nil {
		t.Fatal(err)
	}
	// writers that never commit: what a killed run leaves
	w1 := write(t, s, "data/region-0000/part-00001.parquet", payload(7, 6<<20))
	w2 := write(t, s, "data/region-0003/part-00000.parquet", payload(8, 1000))
	other := write(t, s, "rejects/part-00000.jsonl", payload(9, 100))
	if err := s.Sweep(ctx, "data/"); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	wantNames(t, s, "", "data/region-0000/part-00000.parquet")
	wantObject(t, s, "data/region-0000/part-00000.parquet", done)
	if d, ok := s.(store.Dir); ok {
		for _, f := range filesUnder(t, filepath.Join(d.Path(), "data")) {
			if f != "region-0000/part-00000.parquet" {
				t.Fatalf("Sweep left %s", f)
			}
		}
	}
	// a writer outside the swept prefix still commits
	commit(t, other, 100)
	wantNames(t, s, "rejects/", "rejects/part-00000.jsonl")
	// what the swept writers do now does not matter, as long as nothing appears
	w1.Commit(ctx)
	w1.Abort()
	w2.Abort()
	if err := s.Sweep(ctx, ""); err != nil {
		t.Fatalf("Sweep all: %v", err)
	}
	for _, n := range names(t, s, "") {
		if n != "data/region-0000/part-00000.parquet" && n != "rejects/part-00000.jsonl" && n != "data/region-0000/part-00001.parquet" {
			t.Fatalf("after Sweep: %s", n)
		}
	}
	if err := s.Sweep(ctx, "nothing/"); err != nil {
		t.Fatalf("Sweep of an empty prefix: %v", err)
	}
}

func concurrentWriters(t *testing.T, s store.Store) {
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := fmt.Sprintf("data/region-%04d/part-00000.parquet", i%3*10+i)
			w, err := s.Create(ctx, name)
			if err != nil {
				errs[i] = err
				return
			}
			data := payload(int64(i), 200<<10)
			for rest := data; len(rest) > 0; rest = rest[min(len(rest), 10_000):] {
				if _, err := w.Write(rest[:min(len(rest), 10_000)]); err != nil {
					errs[i] = err
					return
				}
			}
			if _, err := w.Commit(ctx); err != nil {
				errs[i] = err
			}
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		wantObject(t, s, fmt.Sprintf("data/region-%04d/part-00000.parquet", i%3*10+i), payload(int64(i), 200<<10))
	}
	if got := len(names(t, s, "data/")); got != n {
		t.Fatalf("List: %d objects, want %d", got, n)
	}
}

func location(t *testing.T, s store.Store) {
	dir := s.Location("data/")
	if dir == "" || dir[len(dir)-1] != '/' && dir[len(dir)-1] != filepath.Separator {
		t.Fatalf("Location(\"data/\") = %q: a folder keeps its trailing slash", dir)
	}
	obj := s.Location("manifest.json")
	if obj == "" || bytes.HasSuffix([]byte(obj), []byte("/")) {
		t.Fatalf("Location(\"manifest.json\") = %q", obj)
	}
	if s.Location("data/region-0000/part-00000.parquet") == s.Location("data/region-0000/part-00001.parquet") {
		t.Fatal("Location names two objects alike")
	}
}

func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

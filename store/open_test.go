package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := s.(Dir); !ok || d.Path() != dir {
		t.Fatalf("a path opens a local folder, got %T", s)
	}
	// "mysql://x" must never become a folder named "mysql:"
	for _, uri := range []string{"mysql://h/db", "s3://bucket/prefix", "OSS://b/p"} {
		if _, err := Open(ctx, uri, os.Getenv); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Open(%q): %v, want ErrUnsupported", uri, err)
		}
	}
	var got string
	Register("s3", func(_ context.Context, uri string, env func(string) string) (Store, error) {
		got = uri
		return NewLocal(filepath.Join(dir, "bucket"))
	})
	defer Register("s3", nil)
	if _, err := Open(ctx, "s3://bucket/prefix?endpoint=http://127.0.0.1:9000", os.Getenv); err != nil || got != "s3://bucket/prefix?endpoint=http://127.0.0.1:9000" {
		t.Fatalf("the registered opener was not called: %v, %q", err, got)
	}
}

// The names PrivateNames' function matches are created 0600 (by Put and by Create, over a wider
// leftover of an earlier run too), the rest 0644 (before the umask); without it every object is
// 0644.
func TestLocalPrivateNames(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	private := func(name string) bool { return strings.HasPrefix(name, "secret") }
	l, _ := NewLocal(dir, PrivateNames(private))
	plain, _ := NewLocal(filepath.Join(dir, "plain"))
	if err := os.WriteFile(filepath.Join(dir, TempPrefix+"secret-created"), []byte("left wide"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		st   *Local
		name string
		perm os.FileMode
	}{
		{l, "secret.json", 0o600}, {l, "secret-created", 0o600}, {l, "public.json", 0o644},
		{l, "data/region-0000/part-00000.parquet", 0o644}, {plain, "secret.json", 0o644},
	} {
		if strings.HasSuffix(c.name, "-created") {
			w, err := c.st.Create(ctx, c.name)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte("x"))
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		} else if err := c.st.Put(ctx, c.name, []byte("x")); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(c.st.Path(), c.name))
		if err != nil || st.Mode().Perm()&^c.perm != 0 || st.Mode().Perm()&0o600 != 0o600 || (c.perm == 0o644 && st.Mode().Perm()&0o004 == 0) {
			t.Fatalf("%s in %s: mode %v (%v), want %v", c.name, c.st.Path(), st.Mode().Perm(), err, c.perm)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, bad := range []string{"", "/etc/x", "../x", "a/../../x", "a//b", "a/./b", `a\b`, "a/", ".rekey-tmp-x", "data/.rekey-tmp-part"} {
		if err := CheckName(bad); !errors.Is(err, ErrBadName) {
			t.Errorf("CheckName(%q) = %v", bad, err)
		}
	}
	for _, good := range []string{"checkpoint.json", "data/region-0000/part-00000.parquet", ".rekey.lock"} {
		if err := CheckName(good); err != nil {
			t.Errorf("CheckName(%q) = %v", good, err)
		}
	}
	l, _ := NewLocal(t.TempDir())
	if _, err := l.Create(context.Background(), "../escape"); err == nil || !strings.Contains(err.Error(), "climb") && !errors.Is(err, ErrBadName) {
		t.Fatalf("Create outside the store: %v", err)
	}
}

// A flag that takes a store or something else (verify's --target: a folder, a bucket or a
// table) tells them apart by IsLocation: paths and file: are folders, the object stores rekey
// knows of are stores whether this build registered them or not (Open says which), a scheme
// registered later is one too, and any other scheme is not a store.
func TestIsLocation(t *testing.T) {
	for uri, want := range map[string]bool{
		"out": true, "/data/out": true, "file:out": true, "file:///data/out": true,
		"s3://bucket/prefix": true, "OSS://bucket/prefix": true,
		"mysql://root@h/db": false, "lindorm://u@h/db": false, "ftp://x/y": false, "gs://bucket/p": false,
	} {
		if got := IsLocation(uri); got != want {
			t.Errorf("IsLocation(%q) = %v, want %v", uri, got, want)
		}
	}
	Register("gs", func(context.Context, string, func(string) string) (Store, error) { return nil, nil })
	defer Register("gs", nil)
	if !IsLocation("gs://bucket/p") {
		t.Errorf("a registered scheme is not a location")
	}
}

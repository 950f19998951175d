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

func TestLocalPrivateNames(t *testing.T) {
	ctx := context.Background()
	l, _ := NewLocal(t.TempDir())
	for name, perm := range map[string]os.FileMode{
		"checkpoint.json": 0o600, "rejects.jsonl": 0o600, "rejected-rows.csv": 0o600, "rejects/p0001-x.jsonl": 0o600,
		"manifest.json": 0o644, "data/region-0000/part-00000.parquet": 0o644,
	} {
		if err := l.Put(ctx, name, []byte("x")); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(l.Path(), name))
		if err != nil || st.Mode().Perm()&^perm != 0 || st.Mode().Perm()&0o600 != 0o600 {
			t.Fatalf("%s: mode %v, want %v (rejected rows may be personal data)", name, st.Mode().Perm(), perm)
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

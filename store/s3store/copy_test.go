package s3store

import (
	"bytes"
	"context"
	"testing"

	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// put commits data under name through a Writer, as the region sink does.
func put(t *testing.T, s *Store, name string, data []byte) {
	t.Helper()
	w, err := s.Create(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeAll(w, data, 64<<10); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// Shards writing under one bucket merge without copying data. Between two prefixes of one bucket,
// CopyFrom is one CopyObject: no object byte is read from or sent to the server by rekey, and the
// copy is byte-exact.
func TestCopyFromSameBucketGofakes3(t *testing.T) {
	rec := &recorder{}
	srv := s3test.StartGofakes3(t, rec.wrap)
	ctx := t.Context()
	shard := openStore(t, srv, "shard-0", Options{})
	merged := openStore(t, srv, "merged", Options{})
	data := payload(3, 3<<20)
	put(t, shard, "data/region-0000/part-00000.parquet", data)
	before := len(rec.all())
	done, err := merged.CopyFrom(ctx, shard, "data/region-0000/part-00000.parquet", "data/region-0003/part-00007.parquet")
	if err != nil || !done {
		t.Fatalf("CopyFrom: done %v, %v", done, err)
	}
	var ops []string
	for _, r := range rec.all()[before:] {
		ops = append(ops, r.op)
		if len(r.body) > 0 {
			t.Errorf("%s sent %d bytes of body", r.op, len(r.body))
		}
	}
	if len(ops) != 2 || ops[0] != "HeadObject" || ops[1] != "CopyObject" {
		t.Fatalf("requests %v, want HeadObject, CopyObject", ops)
	}
	got, err := merged.Get(ctx, "data/region-0003/part-00007.parquet")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("copy: %d bytes, want %d: %v", len(got), len(data), err)
	}
	if got, _ := shard.Get(ctx, "data/region-0000/part-00000.parquet"); !bytes.Equal(got, data) {
		t.Fatal("the source changed")
	}
	// a missing source is ErrNotExist, and nothing is created
	if _, err := merged.CopyFrom(ctx, shard, "data/nope.parquet", "data/x.parquet"); !store.IsNotExist(err) {
		t.Fatalf("missing source: %v", err)
	}
	if _, err := merged.Stat(ctx, "data/x.parquet"); !store.IsNotExist(err) {
		t.Fatalf("a failed copy left an object: %v", err)
	}
}

// Another server, or a local folder, is not the same bucket: CopyFrom says so (false, no error)
// and sends nothing, so merge streams the bytes.
func TestCopyFromElsewhereDeclines(t *testing.T) {
	rec := &recorder{}
	a := s3test.StartGofakes3(t, rec.wrap)
	b := s3test.StartGofakes3(t, nil)
	ctx := t.Context()
	out := openStore(t, a, "merged", Options{})
	other := openStore(t, b, "shard-0", Options{})
	put(t, other, "data/f", []byte("x"))
	local, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	before := len(rec.all())
	for _, from := range []store.Store{other, local} {
		if done, err := out.CopyFrom(ctx, from, "data/f", "data/g"); done || err != nil {
			t.Fatalf("CopyFrom %s: done %v, %v", from.Location(""), done, err)
		}
	}
	if n := len(rec.all()) - before; n != 0 {
		t.Fatalf("%d requests for copies that were declined", n)
	}
}

// On a real server, both ways: CopyObject under copyMax, and above it a multipart upload of
// UploadPartCopy ranges (lowered here to 5 MiB parts over 12 MiB), byte-exact, with no upload
// left unfinished.
func TestCopyFromVersitygw(t *testing.T) {
	srv := s3test.StartVersitygw(t)
	ctx := t.Context()
	shard := openStore(t, srv, "shard-1", Options{PartSize: 5 << 20})
	merged := openStore(t, srv, "merged", Options{})
	small, large := payload(4, 700<<10), payload(5, 12<<20+123)
	put(t, shard, "data/region-0001/part-00000.parquet", small)
	put(t, shard, "data/region-0001/part-00001.parquet", large)
	defer func(m, p int64) { copyMax, copyPartSize = m, p }(copyMax, copyPartSize)
	copyMax, copyPartSize = 6<<20, 5<<20
	for name, want := range map[string][]byte{"part-00000.parquet": small, "part-00001.parquet": large} {
		done, err := merged.CopyFrom(ctx, shard, "data/region-0001/"+name, "data/region-0001/"+name)
		if err != nil || !done {
			t.Fatalf("CopyFrom %s: done %v, %v", name, done, err)
		}
		got, err := merged.Get(ctx, "data/region-0001/"+name)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes back, want %d: %v", name, len(got), len(want), err)
		}
	}
	if n := unfinishedUploads(t, merged); n != 0 {
		t.Fatalf("%d unfinished uploads", n)
	}
	// A part copy that fails aborts its upload: the destination never appears.
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := merged.CopyFrom(ctx2, shard, "data/region-0001/part-00001.parquet", "data/region-0002/part-00000.parquet"); err == nil {
		t.Fatal("a canceled copy succeeded")
	}
	if _, err := merged.Stat(ctx, "data/region-0002/part-00000.parquet"); !store.IsNotExist(err) {
		t.Fatalf("a failed copy is visible: %v", err)
	}
}

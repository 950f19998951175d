package s3store

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekey/rekey/store/s3store/s3test"
)

// A CreateMultipartUpload whose answer never comes (a stall: the server started the upload,
// the response was lost) is retried after StallTimeout. The upload the lost answer named stayed
// in the bucket, empty and billed, after a run that succeeded: the writer aborts it once the
// retry gave it its own upload. The object is whole and the bucket keeps no unfinished upload.
func TestStalledCreateLeavesNoUpload(t *testing.T) {
	var stalled atomic.Int32
	srv := s3test.StartVersitygw(t).Proxy(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s3test.Op(r) == "CreateMultipartUpload" && stalled.Add(1) == 1 {
				next.ServeHTTP(httptest.NewRecorder(), r) // the server starts the upload...
				<-r.Context().Done()                      // ...and its answer never leaves: the client gives up
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	s := openStore(t, srv, "out", Options{PartSize: 5 << 20, StallTimeout: 500 * time.Millisecond})
	ctx := t.Context()
	data := payload(11, 11<<20+100)
	w, err := s.Create(ctx, "data/region-0000/part-00000.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeAll(w, data, 64<<10); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := stalled.Load(); n < 2 {
		t.Fatalf("%d CreateMultipartUpload requests, want the stalled one and its retry", n)
	}
	if got, err := s.Get(ctx, "data/region-0000/part-00000.parquet"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}
	if left, err := s.Unfinished(ctx, ""); err != nil || len(left) > 0 {
		t.Fatalf("unfinished uploads after a successful commit: %v %v", left, err)
	}
}

// A CompleteMultipartUpload whose answer never comes (the server completed the upload, the
// response was lost) is retried, and a server whose Complete is not idempotent answers the
// retry NoSuchUpload (MinIO does; AWS S3 and versitygw answer it again): the object was there,
// whole, but the commit failed and with it the run. The writer now checks the object its key
// holds, by the size it wrote and the ETag of the parts it sent, and commits. An object that is
// not the writer's (another one under the key, the upload gone) still fails the commit.
func TestLostCompleteAnswerCommits(t *testing.T) {
	var completes atomic.Int32
	var forward atomic.Bool // the first Complete reaches the server; false: none does
	srv := s3test.StartVersitygw(t).Proxy(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s3test.Op(r) != "CompleteMultipartUpload" {
				next.ServeHTTP(w, r)
				return
			}
			if completes.Add(1) == 1 && forward.Load() {
				next.ServeHTTP(httptest.NewRecorder(), r) // the server completes the upload...
				<-r.Context().Done()                      // ...and its answer never leaves: the client gives up
				return
			}
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified multipart upload does not exist.</Message></Error>`)
		})
	})
	s := openStore(t, srv, "out", Options{PartSize: 5 << 20, StallTimeout: 500 * time.Millisecond})
	ctx := t.Context()
	const name = "data/region-0000/part-00000.parquet"
	data := payload(12, 11<<20+100)
	write := func() (int64, error) {
		w, err := s.Create(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		if err := writeAll(w, data, 64<<10); err != nil {
			t.Fatal(err)
		}
		return w.Commit(ctx)
	}

	forward.Store(true)
	n, err := write()
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Commit of an upload the server completed: %d bytes, %v", n, err)
	}
	if n := completes.Load(); n < 2 {
		t.Fatalf("%d CompleteMultipartUpload requests, want the stalled one and its retry", n)
	}
	if got, err := s.Get(ctx, name); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}

	// The same name again, the same size, other bytes, and no Complete reaches the server: the
	// object the key holds is the first writer's, not this one's.
	forward.Store(false)
	data = payload(13, len(data))
	if _, err := write(); !isCode(err, "NoSuchUpload") {
		t.Fatalf("Commit whose upload is gone, under an object of another writer: %v, want NoSuchUpload", err)
	}
}

// A CreateMultipartUpload of a server-side copy (an object over copyMax, as merge copies a
// shard's large file) whose answer never comes is retried as a writer's is: the upload the lost
// answer named is aborted once the retry gave the copy its own, so no upload of the copied key is
// left in the bucket, empty and billed, after a merge that succeeded. (gofakes3 has no
// UploadPartCopy: the handler here serves it as a ranged GetObject sent on as an UploadPart.)
func TestStalledCopyCreateLeavesNoUpload(t *testing.T) {
	var stalled atomic.Int32
	srv := s3test.StartGofakes3(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch s3test.Op(r) {
			case "CreateMultipartUpload":
				if stalled.Add(1) == 1 {
					next.ServeHTTP(httptest.NewRecorder(), r) // the server starts the upload...
					<-r.Context().Done()                      // ...and its answer never leaves
					return
				}
			case "UploadPartCopy":
				src, _ := url.PathUnescape(r.Header.Get("X-Amz-Copy-Source"))
				get := httptest.NewRequest(http.MethodGet, "/"+strings.TrimPrefix(src, "/"), nil)
				get.Header.Set("Range", r.Header.Get("X-Amz-Copy-Source-Range"))
				got := httptest.NewRecorder()
				next.ServeHTTP(got, get)
				put := r.Clone(r.Context())
				put.Header = http.Header{}
				put.Body = io.NopCloser(bytes.NewReader(got.Body.Bytes()))
				put.ContentLength = int64(got.Body.Len())
				put.Header.Set("Content-Length", fmt.Sprint(got.Body.Len()))
				up := httptest.NewRecorder()
				next.ServeHTTP(up, put)
				if up.Code != http.StatusOK {
					w.WriteHeader(up.Code)
					w.Write(up.Body.Bytes())
					return
				}
				w.Header().Set("Content-Type", "application/xml")
				fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><CopyPartResult><ETag>%s</ETag></CopyPartResult>`, up.Header().Get("ETag"))
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	shard := openStore(t, srv, "shard-0", Options{})
	merged := openStore(t, srv, "merged", Options{StallTimeout: 500 * time.Millisecond})
	ctx := t.Context()
	data := payload(12, 3<<20+7)
	if err := shard.Put(ctx, "data/region-0000/part-00000.parquet", data); err != nil {
		t.Fatal(err)
	}
	defer func(m, p int64) { copyMax, copyPartSize = m, p }(copyMax, copyPartSize)
	copyMax, copyPartSize = 1<<20, 1<<20
	done, err := merged.CopyFrom(ctx, shard, "data/region-0000/part-00000.parquet", "data/region-0000/part-00000.parquet")
	if err != nil || !done {
		t.Fatalf("CopyFrom: done %v, %v", done, err)
	}
	if n := stalled.Load(); n < 2 {
		t.Fatalf("%d CreateMultipartUpload requests, want the stalled one and its retry", n)
	}
	if got, err := merged.Get(ctx, "data/region-0000/part-00000.parquet"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}
	if left, err := merged.Unfinished(ctx, ""); err != nil || len(left) > 0 {
		t.Fatalf("unfinished uploads after a successful copy: %v %v", left, err)
	}
}

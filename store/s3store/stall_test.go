package s3store

import (
	"bytes"
	"net/http"
	"net/http/httptest"
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

package s3store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

func TestOpenWithoutCredentialsSaysWhatToSet(t *testing.T) {
	srv := s3test.StartGofakes3(t, nil)
	for _, tc := range []struct {
		uri  string
		env  map[string]string
		want []string
	}{
		{srv.URI, nil, []string{"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}},
		{srv.URI, map[string]string{"AWS_ACCESS_KEY_ID": "id"}, []string{"set AWS_SECRET_ACCESS_KEY"}},
		// oss:// reads OSS_*, never AWS_*: a user with both set gets the bucket they meant
		{"oss://rekey/out?region=cn-hangzhou&endpoint=" + srv.Endpoint + "&path_style=true", srv.Env, []string{"OSS_ACCESS_KEY_ID and OSS_ACCESS_KEY_SECRET"}},
	} {
		_, err := Open(t.Context(), tc.uri, s3test.Getenv(tc.env))
		if err == nil {
			t.Fatalf("Open(%s) without credentials succeeded", tc.uri)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Open(%s): %v\nwant it to say %q", tc.uri, err, w)
			}
		}
	}
}

func TestOpenMissingBucketGofakes3(t *testing.T)  { testMissingBucket(t, s3test.StartGofakes3(t, nil)) }
func TestOpenMissingBucketVersitygw(t *testing.T) { testMissingBucket(t, s3test.StartVersitygw(t)) }

func testMissingBucket(t *testing.T, srv *s3test.Server) {
	uri := strings.Replace(srv.URI, "s3://rekey/", "s3://no-such-bucket/", 1)
	_, err := Open(t.Context(), uri, s3test.Getenv(srv.Env))
	if err == nil {
		t.Fatal("Open of a bucket that does not exist succeeded")
	}
	for _, w := range []string{`bucket "no-such-bucket" does not exist`, "create it"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Open: %v\nwant it to say %q", err, w)
		}
	}
}

// versitygw checks signatures (gofakes3 does not): a wrong secret or an unknown key is one
// error at Open, before anything is written, that names the variables and never their values.
func TestWrongCredentialsVersitygw(t *testing.T) {
	srv := s3test.StartVersitygw(t)
	const wrongSecret = "not-the-right-secret-value"
	for _, env := range []map[string]string{
		{"AWS_ACCESS_KEY_ID": srv.Env["AWS_ACCESS_KEY_ID"], "AWS_SECRET_ACCESS_KEY": wrongSecret},
		{"AWS_ACCESS_KEY_ID": "unknown-key", "AWS_SECRET_ACCESS_KEY": wrongSecret},
	} {
		_, err := Open(t.Context(), srv.URI, s3test.Getenv(env))
		if err == nil {
			t.Fatalf("Open with wrong credentials succeeded")
		}
		msg := err.Error()
		if !strings.Contains(msg, "refused the credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY") {
			t.Errorf("Open: %v\nwant it to say the server refused the credentials and name the variables", err)
		}
		if strings.Contains(msg, wrongSecret) {
			t.Errorf("Open: the error shows the secret: %v", err)
		}
	}
	s := openStore(t, srv, "out", Options{})
	if names, err := s.List(t.Context(), ""); err != nil || len(names) != 0 {
		t.Fatalf("after refused credentials: List = %v, %v; want nothing written", names, err)
	}
}

// A server that echoes the secret back (some put the string to sign, or the request, in their
// error message) does not get it into rekey's errors.
func TestErrorsMaskEchoedSecret(t *testing.T) {
	const secret = "echoed-secret-0123456789"
	var fail atomic.Bool
	srv := s3test.StartGofakes3(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if fail.Load() {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidArgument</Code><Message>bad request with key %s</Message></Error>`, secret)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	env := map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": secret}
	s, err := Open(t.Context(), srv.URI, s3test.Getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	err = s.Put(t.Context(), "manifest.json", []byte("{}"))
	if err == nil {
		t.Fatal("Put succeeded on a failing server")
	}
	if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "xxxxx") {
		t.Fatalf("the secret is not masked: %v", err)
	}
	if errorCode(err) != "InvalidArgument" {
		t.Fatalf("masking lost the error chain: code %q", errorCode(err))
	}
}

// OSS refuses aws-chunked bodies and CRC32 trailers, which aws-sdk-go-v2 sends by default since
// service/s3 v1.73 (apache/doris#58467), and honours only Content-MD5 on DeleteObjects. Every
// request rekey makes, on oss:// and s3:// alike, must be of the form OSS accepts. Over TLS
// (OSS's endpoints are https) is where the SDK would switch to aws-chunked trailers.
func TestRequestsAreOSSCompatible(t *testing.T) {
	for _, scheme := range []string{"oss", "s3"} {
		for _, useTLS := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/tls=%v", scheme, useTLS), func(t *testing.T) { testOSSCompatible(t, scheme, useTLS) })
		}
	}
}

func testOSSCompatible(t *testing.T, scheme string, useTLS bool) {
	rec := &recorder{}
	backend := s3mem.New()
	if err := backend.CreateBucket("rekey"); err != nil {
		t.Fatal(err)
	}
	h := rec.wrap(gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	var ts *httptest.Server
	if useTLS {
		ts = httptest.NewTLSServer(h)
		testTLSConfig = ts.Client().Transport.(*http.Transport).TLSClientConfig
		defer func() { testTLSConfig = nil }()
	} else {
		ts = httptest.NewServer(h)
	}
	defer ts.Close()
	env := map[string]string{"OSS_ACCESS_KEY_ID": "oss-id", "OSS_ACCESS_KEY_SECRET": "oss-secret",
		"AWS_ACCESS_KEY_ID": "aws-id", "AWS_SECRET_ACCESS_KEY": "aws-secret"}
	uri := scheme + "://rekey/out?region=cn-hangzhou&path_style=true&endpoint=" + ts.URL
	s, err := OpenWith(t.Context(), uri, s3test.Getenv(env), Options{PartSize: 5 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := s.Put(ctx, "checkpoint.json", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	small, big := payload(1, 1000), payload(2, 11<<20)
	for name, data := range map[string][]byte{"data/small": small, "data/big": big} {
		w, err := s.Create(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := writeAll(w, data, 100_000); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Get(ctx, "data/big"); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Get(data/big): %d bytes, %v", len(got), err)
	}
	if err := s.Remove(ctx, "data/small", "checkpoint.json"); err != nil {
		t.Fatal(err)
	}
	if err := s.Sweep(ctx, ""); err != nil {
		t.Fatal(err)
	}

	wantKey := "Credential=" + env[map[string]string{"oss": "OSS_ACCESS_KEY_ID", "s3": "AWS_ACCESS_KEY_ID"}[scheme]] + "/"
	for _, r := range rec.all() {
		h := r.header
		if enc := h.Get("Content-Encoding"); strings.Contains(enc, "aws-chunked") {
			t.Errorf("%s: Content-Encoding %q", r.op, enc)
		}
		if sha := h.Get("X-Amz-Content-Sha256"); strings.HasPrefix(sha, "STREAMING-") {
			t.Errorf("%s: X-Amz-Content-Sha256 %q (aws-chunked signing)", r.op, sha)
		}
		if tr := h.Get("X-Amz-Trailer"); tr != "" {
			t.Errorf("%s: a checksum trailer %q", r.op, tr)
		}
		if (r.op == "PutObject" || r.op == "UploadPart") && h.Get("X-Amz-Content-Sha256") != "UNSIGNED-PAYLOAD" {
			// TLS, or loopback: no second pass over every part to hash it
			t.Errorf("%s: X-Amz-Content-Sha256 %q, want UNSIGNED-PAYLOAD", r.op, h.Get("X-Amz-Content-Sha256"))
		}
		if r.op == "PutObject" || r.op == "UploadPart" || r.op == "CreateMultipartUpload" || r.op == "CompleteMultipartUpload" {
			for k := range h {
				if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-amz-checksum-") || lk == "x-amz-sdk-checksum-algorithm" {
					t.Errorf("%s: checksum header %s", r.op, k)
				}
			}
		}
		if r.op == "DeleteObjects" && h.Get("Content-Md5") != contentMD5(r.body) {
			t.Errorf("DeleteObjects: Content-MD5 %q, want %q: OSS honours nothing else", h.Get("Content-Md5"), contentMD5(r.body))
		}
		if !strings.Contains(h.Get("Authorization"), wantKey) {
			t.Errorf("%s: not signed with the key of %s", r.op, wantKey)
		}
	}
	if rec.count("UploadPart") < 3 || rec.count("DeleteObjects") != 1 {
		t.Fatalf("the test did not exercise the calls: %d UploadPart, %d DeleteObjects", rec.count("UploadPart"), rec.count("DeleteObjects"))
	}
}

// A 20 MiB object written in odd-sized pieces is three parts of the default 8 MiB, uploaded
// while the writer goes on, and reads back byte for byte, whole and across the part seams.
func TestObject20MiBSeveralPartsByteExact(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t testing.TB, wrap func(http.Handler) http.Handler) *s3test.Server
	}{
		{"gofakes3", s3test.StartGofakes3},
		{"versitygw", func(t testing.TB, wrap func(http.Handler) http.Handler) *s3test.Server {
			return s3test.StartVersitygw(t)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			srv := tc.start(t, rec.wrap)
			s := openStore(t, srv, "out", Options{})
			ctx := t.Context()
			data := payload(20, 20<<20)
			name := "data/region-0007/part-00000.parquet"
			w, err := s.Create(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if err := writeAll(w, data, 77_777); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Stat(ctx, name); !store.IsNotExist(err) {
				t.Fatalf("Stat before Commit: %v, want not exist", err)
			}
			n, err := w.Commit(ctx)
			if err != nil || n != int64(len(data)) {
				t.Fatalf("Commit = %d, %v", n, err)
			}
			if srv.Dir == "" && rec.count("UploadPart") != 3 {
				t.Errorf("%d parts uploaded, want 3 (8 + 8 + 4 MiB)", rec.count("UploadPart"))
			}
			got, err := s.Get(ctx, name)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("Get: %d bytes, %v; want the %d written", len(got), err, len(data))
			}
			r, err := s.Open(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for _, off := range []int64{0, 8<<20 - 5, 16<<20 - 1, int64(len(data)) - 10} {
				buf := make([]byte, 10)
				if _, err := r.ReadAt(buf, off); err != nil && err != io.EOF {
					t.Fatalf("ReadAt(%d): %v", off, err)
				}
				if !bytes.Equal(buf, data[off:off+10]) {
					t.Fatalf("ReadAt(%d) read other bytes", off)
				}
			}
		})
	}
}

// 200 writers open at once (rekey keeps a file open per region), all in the middle of a part
// at the same time: parts held in RAM would take 200 parts of heap; spooled, the heap holds
// only the writers' 32 KiB buffers and the uploads in flight. Parts are 1 MiB here (S3's
// minimum is 5 MiB) to keep the test quick; the measure is relative to the part size.
func TestManyConcurrentWritersBoundedMemory(t *testing.T) {
	defer func(m int64) { minPartSize = m }(minPartSize)
	minPartSize = 1 << 20
	const writers, partSize, size = 200, 1 << 20, 3 << 19 // 1.5 parts each
	d := &discardServer{bytes: map[string]int64{}}
	srv := s3test.StartGofakes3(t, func(http.Handler) http.Handler { return d })
	s := openStore(t, srv, "out", Options{PartSize: partSize})
	ctx := t.Context()
	chunk := payload(3, 64<<10) // shared: the test's own data must not be what grows the heap

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	ws := make([]store.Writer, writers)
	for i := range ws {
		w, err := s.Create(ctx, fmt.Sprintf("data/region-%04d/part-00000.parquet", i))
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = w
	}
	// Round-robin over all writers, as a sink fed rows of every region does: all 200 are
	// mid-part at the same time.
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for written := 0; written < size; written += len(chunk) {
				for i := g; i < writers; i += 8 {
					if _, err := ws[i].Write(chunk); err != nil {
						errs <- err
						return
					}
				}
			}
			for i := g; i < writers; i += 8 {
				if _, err := ws[i].Commit(ctx); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(stopSampling)
	<-sampled
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := 0; i < writers; i++ {
		if got := d.bytes[fmt.Sprintf("rekey/out/data/region-%04d/part-00000.parquet", i)]; got != size {
			t.Fatalf("writer %d: server received %d bytes, want %d", i, got, size)
		}
	}
	grew := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("%d writers x %d KiB, %d KiB parts: peak heap in use %.1f MiB above the start (%d multipart uploads)",
		writers, size>>10, partSize>>10, float64(grew)/(1<<20), d.uploads.Load())
	// In-RAM parts: >= 200 x 1 MiB. Spooled: 200 x 32 KiB buffers plus the uploads in flight.
	if limit := int64(writers * partSize / 4); grew > limit {
		t.Fatalf("heap grew %d MiB with %d open writers, want under %d MiB", grew>>20, writers, limit>>20)
	}
}

// The server dies while parts are uploading: Write or Commit fails within seconds with an
// error naming the object, and nothing is left visible.
func TestServerStoppedMidUploadGofakes3(t *testing.T) {
	testServerStoppedMidUpload(t, s3test.StartGofakes3(t, nil))
}

func TestServerStoppedMidUploadVersitygw(t *testing.T) {
	testServerStoppedMidUpload(t, s3test.StartVersitygw(t))
}

func testServerStoppedMidUpload(t *testing.T, srv *s3test.Server) {
	s := openStore(t, srv, "out", Options{PartSize: 5 << 20})
	ctx := t.Context()
	w, err := s.Create(ctx, "data/region-0000/part-00000.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeAll(w, payload(4, 6<<20), 64<<10); err != nil { // a part is uploading
		t.Fatal(err)
	}
	srv.Stop()
	start := time.Now()
	err = writeAll(w, payload(5, 12<<20), 64<<10)
	if err == nil {
		_, err = w.Commit(ctx)
	}
	took := time.Since(start)
	if err == nil {
		t.Fatal("Write and Commit succeeded with the server stopped")
	}
	if !strings.Contains(err.Error(), "data/region-0000/part-00000.parquet") {
		t.Errorf("the error does not name the object: %v", err)
	}
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
	if took > 30*time.Second {
		t.Fatalf("took %v to fail, want seconds", took)
	}
	start = time.Now()
	w.Abort() // the server is gone: an error is expected, a hang is not
	if took := time.Since(start); took > 35*time.Second {
		t.Fatalf("Abort took %v", took)
	}
}

// A server that stops answering (a hung process, a black-holed link) fails the request once
// nothing moved for StallTimeout, instead of hanging the run.
func TestHungServerFailsAfterStall(t *testing.T) {
	var hang atomic.Bool
	release := make(chan struct{})
	srv := s3test.StartGofakes3(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hang.Load() {
				<-release // neither read the body nor answer
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	t.Cleanup(func() { close(release) }) // runs before the server's own cleanup stops it
	s := openStore(t, srv, "out", Options{PartSize: 5 << 20, StallTimeout: time.Second, MaxAttempts: 2})
	ctx := t.Context()
	w, err := s.Create(ctx, "data/x")
	if err != nil {
		t.Fatal(err)
	}
	hang.Store(true)
	start := time.Now()
	err = writeAll(w, payload(6, 12<<20), 64<<10)
	if err == nil {
		_, err = w.Commit(ctx)
	}
	if err == nil {
		t.Fatal("Commit succeeded against a hung server")
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("took %v to fail, want a few stall timeouts", took)
	}
	w.Abort()
}

// A slow server (latency on every call, a thin link) still takes the object whole.
func TestSlowServerStillWorks(t *testing.T) {
	srv := s3test.StartGofakes3(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(150 * time.Millisecond) // the server's latency
			r.Body = io.NopCloser(&slowReader{r: r.Body, perRead: 2 * time.Millisecond})
			next.ServeHTTP(w, r)
		})
	})
	s := openStore(t, srv, "out", Options{PartSize: 5 << 20, StallTimeout: 2 * time.Second})
	ctx := t.Context()
	data := payload(7, 11<<20)
	w, err := s.Create(ctx, "data/slow")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeAll(w, data, 50_000); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "data/slow"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}
}

// slowReader reads at most 32 KiB per perRead: about 16 MB/s at 2 ms.
type slowReader struct {
	r       io.Reader
	perRead time.Duration
}

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(s.perRead) // the link's speed
	return s.r.Read(p[:min(len(p), 32<<10)])
}

// A part the server keeps refusing fails the writer with a wrapped error naming the part; a
// part refused once is retried and the object completes.
func TestPartFailuresRetryThenFail(t *testing.T) {
	var failPart2 atomic.Int64 // refusals left for part 2
	srv := s3test.StartGofakes3(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s3test.Op(r) == "UploadPart" && r.URL.Query().Get("partNumber") == "2" && failPart2.Add(-1) >= 0 {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>try again</Message></Error>`)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	core, logs := observer.New(zap.WarnLevel)
	s := openStore(t, srv, "out", Options{PartSize: 5 << 20, MaxAttempts: 3, Logger: zap.New(core)})
	ctx := t.Context()
	data := payload(8, 11<<20)

	failPart2.Store(1) // transient
	w, _ := s.Create(ctx, "data/transient")
	if err := writeAll(w, data, 1<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatalf("a part refused once was not retried: %v", err)
	}
	if got, err := s.Get(ctx, "data/transient"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}
	if n := logs.FilterMessage("retrying a request").Len(); n != 1 {
		t.Fatalf("%d retries logged, want 1", n)
	}

	failPart2.Store(100) // persistent
	w, _ = s.Create(ctx, "data/broken")
	err := writeAll(w, data, 1<<20)
	if err == nil {
		_, err = w.Commit(ctx)
	}
	if err == nil {
		t.Fatal("Commit succeeded though part 2 was refused every time")
	}
	if !strings.Contains(err.Error(), "upload part 2 of s3://rekey/out/data/broken") || errorCode(err) != "InternalError" {
		t.Fatalf("error %v: want it to name the part and object and wrap the server's error", err)
	}
	// MaxAttempts 3: two retries, each logged; the third failure is the error, not a retry
	if n := logs.FilterMessage("retrying a request").Len(); n != 1+2 {
		t.Errorf("%d retries logged for a transient failure and one tried 3 times, want 1+2", n)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort after a failed part: %v", err)
	}
	if _, err := s.Stat(ctx, "data/broken"); !store.IsNotExist(err) {
		t.Fatalf("the failed object is visible: %v", err)
	}
	if n := unfinishedUploads(t, s); n != 0 {
		t.Fatalf("Abort left %d multipart uploads", n)
	}
}

func unfinishedUploads(t *testing.T, s *Store) int {
	t.Helper()
	out, err := s.client.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String(s.t.bucket), Prefix: aws.String(s.t.prefix)})
	if isCode(err, "NoSuchUpload") {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Uploads)
}

// A run killed mid-upload leaves a multipart upload (parts the bucket keeps and bills); the
// next run's Sweep, from another process, aborts it and nothing of it is ever listed.
func TestSweepAbortsAKilledRunsUploadsVersitygw(t *testing.T) {
	srv := s3test.StartVersitygw(t)
	ctx := t.Context()
	crashed := openStore(t, srv, "out", Options{PartSize: 5 << 20})
	w, _ := crashed.Create(ctx, "data/region-0000/part-00001.parquet")
	if err := writeAll(w, payload(9, 6<<20), 64<<10); err != nil {
		t.Fatal(err)
	}
	// Wait for the part to be uploaded, then drop the writer as a killed process would.
	ww := w.(*writer)
	ww.wg.Wait()
	if err := ww.failed(); err != nil {
		t.Fatal(err)
	}
	next := openStore(t, srv, "out", Options{})
	if n := unfinishedUploads(t, next); n != 1 {
		t.Fatalf("%d unfinished uploads before Sweep, want 1", n)
	}
	if names, _ := next.List(ctx, ""); len(names) != 0 {
		t.Fatalf("an unfinished upload is listed: %v", names)
	}
	if err := next.Sweep(ctx, "data/"); err != nil {
		t.Fatal(err)
	}
	if n := unfinishedUploads(t, next); n != 0 {
		t.Fatalf("%d unfinished uploads after Sweep", n)
	}
	// The killed writer's Commit, had it resumed, now fails: nothing appears.
	if _, err := w.Commit(ctx); err == nil {
		t.Fatal("Commit of a swept upload succeeded")
	}
	w.Abort()
	if names, _ := next.List(ctx, ""); len(names) != 0 {
		t.Fatalf("after Sweep: %v", names)
	}
}

func TestWriteAfterCommitFails(t *testing.T) {
	srv := s3test.StartGofakes3(t, nil)
	s := openStore(t, srv, "out", Options{})
	w, _ := s.Create(t.Context(), "a")
	if _, err := w.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, errClosed) {
		t.Fatalf("Write after Commit: %v", err)
	}
	if _, err := w.Commit(t.Context()); !errors.Is(err, errClosed) {
		t.Fatalf("Commit twice: %v", err)
	}
}

func TestBadNamesRefused(t *testing.T) {
	srv := s3test.StartGofakes3(t, nil)
	s := openStore(t, srv, "out", Options{})
	for _, name := range []string{"", "/abs", "../up", "a/../b", "a//b", "dir/", "./a"} {
		if _, err := s.Create(t.Context(), name); err == nil {
			t.Errorf("Create(%q) accepted", name)
		}
		if err := s.Put(t.Context(), name, nil); err == nil {
			t.Errorf("Put(%q) accepted", name)
		}
	}
}

// unfinishedInPages starts a store on versitygw whose uploads are listed in pages of 3 and begins
// uploads of the keys it returns under data/region-0000/ (two of one key, across a page's end),
// as killed writers leave them.
func unfinishedInPages(t *testing.T) (*Store, []string) {
	t.Helper()
	was := uploadsPage
	t.Cleanup(func() { uploadsPage = was })
	uploadsPage = 3
	s := openStore(t, s3test.StartVersitygw(t), "out", Options{})
	keys := []string{"a", "b", "c", "c", "d", "e", "f", "g"}
	for _, k := range keys {
		if _, err := s.client.CreateMultipartUpload(t.Context(), &s3.CreateMultipartUploadInput{Bucket: aws.String(s.t.bucket), Key: aws.String(s.key("data/region-0000/" + k))}); err != nil {
			t.Fatal(err)
		}
	}
	return s, keys
}

// Sweep aborts every unfinished upload under its prefix, however many pages they take: here a
// few killed writers' uploads (two of one key, across a page's end) in pages of 3. A listing
// continued past uploads Sweep has just aborted names a marker upload that is gone, which
// versitygw refuses ("Invalid uploadId marker"); the uploads of the later pages stayed.
func TestSweepAbortsUploadsOfEveryPageVersitygw(t *testing.T) {
	s, keys := unfinishedInPages(t)
	ctx := t.Context()
	if err := s.Sweep(ctx, "data/"); err != nil {
		t.Fatalf("Sweep of %d unfinished uploads in pages of %d: %v", len(keys), uploadsPage, err)
	}
	if left, err := s.Unfinished(ctx, ""); err != nil || len(left) != 0 {
		t.Fatalf("after Sweep: unfinished uploads %v, %v", left, err)
	}
}

// Unfinished names the keys of every unfinished upload under its prefix, however many pages they
// take: a shard of a shared output sweeps the region folders it names, and a run's last cut
// sweeps data/, while the other shards have uploads in flight (more than a page of them with
// enough shards and regions). A page continued by its upload-id marker was refused by versitygw
// ("Invalid uploadId marker"), which failed the shard's resume and its last cut.
func TestUnfinishedNamesTheUploadsOfEveryPageVersitygw(t *testing.T) {
	s, keys := unfinishedInPages(t)
	ctx := t.Context()
	names, err := s.Unfinished(ctx, "data/")
	if err != nil {
		t.Fatalf("Unfinished over %d uploads in pages of %d: %v", len(keys), uploadsPage, err)
	}
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for _, k := range keys {
		if !seen["data/region-0000/"+k] {
			t.Errorf("Unfinished %v lacks data/region-0000/%s", names, k)
		}
	}
}

// A writer whose CreateMultipartUpload needed a retry aborts the other uploads of its key,
// however many pages they take. Continuing the listing past an upload just aborted named a
// marker that is gone, which versitygw refuses ("Invalid uploadId marker"): the writer failed
// and the lost uploads of the later pages stayed.
func TestAbortOthersAbortsEveryPageVersitygw(t *testing.T) {
	was := uploadsPage
	t.Cleanup(func() { uploadsPage = was })
	uploadsPage = 2
	s := openStore(t, s3test.StartVersitygw(t), "out", Options{})
	ctx := t.Context()
	const name = "data/region-0000/part-00000.parquet"
	var keep string
	for i := range 7 {
		out, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s.t.bucket), Key: aws.String(s.key(name))})
		if err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			keep = aws.ToString(out.UploadId)
		}
	}
	w, _ := s.Create(ctx, name)
	if err := w.(*writer).abortOthers(keep); err != nil {
		t.Fatalf("abortOthers over 6 lost uploads in pages of %d: %v", uploadsPage, err)
	}
	out, err := s.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(s.t.bucket), Prefix: aws.String(s.key(name))})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, u := range out.Uploads {
		left = append(left, aws.ToString(u.UploadId))
	}
	if len(left) != 1 || left[0] != keep {
		t.Fatalf("uploads left %v, want only the writer's %s", left, keep)
	}
	w.Abort()
}

// An object replaced while it is read fails the next ranged read, also on a server that ignores
// If-Match (gofakes3 does: it answers with the new version): each range's ETag is checked against
// the one the reader opened, so a read never mixes two versions.
func TestReadOfAReplacedObjectFails(t *testing.T) {
	srv := s3test.StartGofakes3(t, nil)
	s := openStore(t, srv, "in", Options{})
	ctx := t.Context()
	if err := s.Put(ctx, "orders.csv", payload(1, 1000)); err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(ctx, "orders.csv")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if _, err := r.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "orders.csv", payload(2, 1000)); err != nil { // the same size, other bytes
		t.Fatal(err)
	}
	n, err := r.ReadAt(buf, 100)
	if err == nil {
		t.Fatalf("read %d bytes of the replacing version after the object was replaced, want an error", n)
	}
	if !strings.Contains(err.Error(), "changed while") {
		t.Errorf("error %q does not say the object changed while it was read", err)
	}
}

// A server (or a proxy before it) that ignores a read's Range header answers with the whole
// object from its first byte: a ReadAt past offset 0 fails, saying so, rather than giving the
// object's first bytes as those at the offset.
func TestReadAtOfAServerIgnoringRangeFails(t *testing.T) {
	srv := s3test.StartGofakes3(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("Range")
			next.ServeHTTP(w, r)
		})
	})
	s := openStore(t, srv, "in", Options{})
	ctx := t.Context()
	data := payload(3, 1000)
	if err := s.Put(ctx, "orders.csv", data); err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(ctx, "orders.csv")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if n, err := r.ReadAt(buf, 0); err != nil || !bytes.Equal(buf[:n], data[:100]) {
		t.Fatalf("ReadAt(0) = %d, %v; want the object's first 100 bytes", n, err)
	}
	n, err := r.ReadAt(buf, 500)
	if err == nil {
		t.Fatalf("ReadAt(500) = %d bytes, no error (the bytes at 500: %v); want an error", n, bytes.Equal(buf[:n], data[500:600]))
	}
	if !strings.Contains(err.Error(), "Range") {
		t.Errorf("error %q does not say the server ignored the range", err)
	}
}

// Every request gets its own MaxAttempts, however many others were retried before: a burst of
// 500s over 60 writes (each refused twice, then taken) is ridden out. The SDK's default retry
// quota (500 tokens, 14 a retry, given back only when the retry succeeds) ran out after about
// 35 such writes and failed the next ones at their first error ("retry quota exceeded").
func TestTransientErrorsRetriedWithoutARunWideQuota(t *testing.T) {
	var mu sync.Mutex
	refused := map[string]int{}
	srv := s3test.StartGofakes3(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s3test.Op(r) == "PutObject" {
				mu.Lock()
				refused[r.URL.Path]++
				n := refused[r.URL.Path]
				mu.Unlock()
				if n <= 2 {
					io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/xml")
					w.WriteHeader(http.StatusInternalServerError)
					fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>try again</Message></Error>`)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	s := openStore(t, srv, "out", Options{})
	var wg sync.WaitGroup
	errs := make([]error, 60)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Put(t.Context(), fmt.Sprintf("data/%02d", i), []byte("row"))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("writes refused twice, then taken, failed: %v", err)
	}
}

// A bucket in another region than the one signed for (region= left out, AWS_REGION unset: us-east-1)
// is refused by S3 with a redirect or a malformed authorization: Open's error says to add
// ?region= with the bucket's region, which S3 names in its answer.
func TestOpenBucketInAnotherRegionSaysWhichRegion(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
	}{
		{"redirect", http.StatusMovedPermanently, `<Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint. Please send all future requests to this endpoint.</Message><Endpoint>rekey.s3.eu-west-1.amazonaws.com</Endpoint><Bucket>rekey</Bucket></Error>`},
		{"malformed authorization", http.StatusBadRequest, `<Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization header is malformed; the region 'us-east-1' is wrong; expecting 'eu-west-1'</Message><Region>eu-west-1</Region></Error>`},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := s3test.StartGofakes3(t, func(http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/xml")
					w.Header().Set("x-amz-bucket-region", "eu-west-1")
					w.WriteHeader(c.status)
					fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?>`+c.body)
				})
			})
			_, err := Open(t.Context(), srv.URI, s3test.Getenv(srv.Env))
			if err == nil {
				t.Fatal("Open of a bucket in another region succeeded")
			}
			if !strings.Contains(err.Error(), "region=eu-west-1") {
				t.Errorf("Open: %v\nwant it to say to add region=eu-west-1", err)
			}
		})
	}
}

// A server given by a host name (endpoint=http://minio.internal:9000) is asked for the bucket
// as a host name of its own (rekey.minio.internal) unless path_style=true: when that name does
// not resolve, Open says to add path_style=true rather than only that a lookup failed.
func TestOpenVirtualHostThatDoesNotResolveSaysPathStyle(t *testing.T) {
	// .invalid never resolves (RFC 6761)
	_, err := Open(t.Context(), "s3://rekey/out?endpoint=http://s3.invalid:9000", s3test.Getenv(map[string]string{
		"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret-key",
	}))
	if err == nil {
		t.Fatal("Open of a bucket whose host name does not resolve succeeded")
	}
	if !strings.Contains(err.Error(), "path_style=true") {
		t.Errorf("Open: %v\nwant it to say to add path_style=true", err)
	}
}

// endpoint= without a scheme is https: a server that speaks plain HTTP there (a local MinIO or
// gateway, 127.0.0.1:9000) fails Open saying to write endpoint=http://..., not only that a TLS
// handshake failed.
func TestOpenPlainHTTPServerAsHTTPSSaysHTTP(t *testing.T) {
	srv := s3test.StartGofakes3(t, nil)
	uri := strings.Replace(srv.URI, "endpoint=http://", "endpoint=", 1)
	_, err := Open(t.Context(), uri, s3test.Getenv(srv.Env))
	if err == nil {
		t.Fatal("Open over TLS of a plain HTTP server succeeded")
	}
	if !strings.Contains(err.Error(), "endpoint=http://") {
		t.Errorf("Open: %v\nwant it to say to write endpoint=http://", err)
	}
}

// A server that honours If-Match (S3, OSS, versitygw; gofakes3 does not, so the handler here
// does) refuses a ranged read of a replaced object with 412 PreconditionFailed: the read fails
// saying that the object changed while it was read, as it does when the answer's ETag tells.
func TestReadOfAReplacedObjectOnAServerHonouringIfMatch(t *testing.T) {
	srv := s3test.StartGofakes3(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if want := r.Header.Get("If-Match"); r.Method == http.MethodGet && want != "" {
				head := httptest.NewRecorder()
				next.ServeHTTP(head, httptest.NewRequest(http.MethodHead, r.URL.String(), nil))
				if head.Header().Get("ETag") != want {
					w.Header().Set("Content-Type", "application/xml")
					w.WriteHeader(http.StatusPreconditionFailed)
					fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message><Condition>If-Match</Condition></Error>`)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	s := openStore(t, srv, "in", Options{})
	ctx := t.Context()
	if err := s.Put(ctx, "orders.csv", payload(1, 1000)); err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(ctx, "orders.csv")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if _, err := r.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "orders.csv", payload(2, 1000)); err != nil {
		t.Fatal(err)
	}
	_, err = r.ReadAt(buf, 100)
	if err == nil {
		t.Fatal("a read of the replaced object succeeded")
	}
	if !strings.Contains(err.Error(), "changed while") {
		t.Errorf("error %q does not say the object changed while it was read", err)
	}
}

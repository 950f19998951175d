// Package s3test starts S3-compatible servers for tests: gofakes3 in process (always there),
// and versitygw, a real S3 gateway, as a child process when its binary is installed.
//
// Both give an output URI for s3store.Open and the environment holding its credentials:
//
//	srv := s3test.StartGofakes3(t, nil) // or StartVersitygw(t)
//	st, err := s3store.Open(ctx, srv.URI, s3test.Getenv(srv.Env))
//
// versitygw is found through $REKEY_VERSITYGW, then PATH, then $GOPATH/bin (~/go/bin). When it
// is missing the test is skipped, unless REKEY_REQUIRE_VERSITYGW=1 (CI sets it), where it fails:
// a CI run must not pass by skipping the real server. Install it with
//
//	go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
package s3test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Bucket is the bucket every server here is started with; Prefix the output's prefix in it.
const (
	Bucket = "rekey"
	Prefix = "out"
)

// Server is a running S3-compatible server with one bucket.
type Server struct {
	Endpoint string            // http://127.0.0.1:PORT
	URI      string            // s3://rekey/out?endpoint=...&path_style=true
	Env      map[string]string // AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
	// Dir is versitygw's root folder (objects are files under Dir/rekey/); "" for gofakes3.
	Dir string
	// PID is versitygw's process id as first started (its CPU time, in the benchmark); 0 for gofakes3.
	PID int

	mu      sync.Mutex
	stop    func()
	stopped bool
	// restart starts the server again on the same address (versitygw: the same Dir).
	restart func() (stop func(), err error)
}

// Stop stops the server now, closing its connections: a fault in the middle of a test. It
// is also called when the test ends; calling it again does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		s.stopped = true
		s.stop()
	}
}

// Restart starts a stopped versitygw again on the same address and folder, so the objects and
// unfinished uploads it held are there again: a server back after an outage. It fails for
// gofakes3, whose objects were in memory.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.restart == nil {
		return errors.New("this server cannot be restarted (gofakes3 keeps its objects in memory)")
	}
	if !s.stopped {
		return errors.New("restart: the server is running; Stop it first")
	}
	stop, err := s.restart()
	if err != nil {
		return err
	}
	s.stop, s.stopped = stop, false
	return nil
}

// Proxy starts a reverse proxy in front of s, its handler wrapped by wrap, and returns it as a
// Server with the same bucket and credentials: tests count, delay or break the requests of a
// real server. The Host header is passed on as the client sent it, so signatures verify.
// Stopping the proxy leaves s running.
func (s *Server) Proxy(t testing.TB, wrap func(http.Handler) http.Handler) *Server {
	t.Helper()
	u, err := url.Parse(s.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u) // its Director keeps the incoming Host
	rp.ErrorLog = log.New(io.Discard, "", 0)
	var h http.Handler = rp
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	p := &Server{Endpoint: ts.URL, Env: s.Env, Dir: s.Dir, stop: func() {
		ts.CloseClientConnections()
		ts.Close()
	}}
	p.URI = p.URIFor(Prefix)
	t.Cleanup(p.Stop)
	return p
}

// URIFor is the URI of another prefix (or, with "", the bucket's root) on the same server.
func (s *Server) URIFor(prefix string) string {
	return fmt.Sprintf("s3://%s/%s?endpoint=%s&path_style=true", Bucket, prefix, s.Endpoint)
}

// Getenv looks names up in env, for s3store.Open's getenv.
func Getenv(env map[string]string) func(string) string {
	return func(name string) string { return env[name] }
}

// StartGofakes3 starts an in-process gofakes3 server (s3mem backend, bucket "rekey").
// wrap, when not nil, wraps its handler: tests inject delays or failures with it.
// gofakes3 does not check signatures: any credentials are accepted.
func StartGofakes3(t testing.TB, wrap func(http.Handler) http.Handler) *Server {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(Bucket); err != nil {
		t.Fatalf("gofakes3: create bucket: %v", err)
	}
	var h http.Handler = gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	s := &Server{
		Endpoint: ts.URL,
		Env:      map[string]string{"AWS_ACCESS_KEY_ID": "fake-access", "AWS_SECRET_ACCESS_KEY": "fake-secret-key"},
		stop: func() {
			ts.CloseClientConnections()
			ts.Close()
		},
	}
	s.URI = s.URIFor(Prefix)
	t.Cleanup(s.Stop)
	return s
}

// VersitygwPath finds the versitygw binary, or says why not.
func VersitygwPath() (string, error) {
	if p := os.Getenv("REKEY_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("REKEY_VERSITYGW=%s: %w", p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			gopath = filepath.Join(home, "go")
		}
	}
	if gopath != "" {
		p := filepath.Join(gopath, "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("versitygw not found: set REKEY_VERSITYGW to its path or put it on PATH (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)")
}

// StartVersitygw starts `versitygw --access K --secret S --port 127.0.0.1:PORT posix DIR` with
// the bucket folder DIR/rekey, waits until it answers, and stops it when the test ends.
func StartVersitygw(t testing.TB) *Server {
	t.Helper()
	bin, err := VersitygwPath()
	if err != nil {
		if os.Getenv("REKEY_REQUIRE_VERSITYGW") == "1" {
			t.Fatalf("REKEY_REQUIRE_VERSITYGW=1 but %v", err)
		}
		t.Skipf("skipping the real-server test: %v", err)
	}
	s, err := LaunchVersitygw(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// NewVersitygw is StartVersitygw outside a test (the fault campaign): it starts versitygw on
// dir, which it creates with the bucket folder, and returns a Server the caller must Stop.
func NewVersitygw(dir string) (*Server, error) {
	bin, err := VersitygwPath()
	if err != nil {
		return nil, err
	}
	return LaunchVersitygw(bin, dir)
}

// LaunchVersitygw starts the versitygw binary bin on dir (creating it with the bucket folder) on a free port.
func LaunchVersitygw(bin, dir string) (*Server, error) {
	if err := os.MkdirAll(filepath.Join(dir, Bucket), 0o755); err != nil {
		return nil, err
	}
	const access, secret = "rekey-test-access", "rekey-test-secret-key"
	var lastErr error
	for try := 0; try < 3; try++ { // the free port may be taken between its probe and the start
		s, err := startVersitygw(bin, dir, access, secret, "")
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("versitygw: %w", lastErr)
}

// startVersitygw starts versitygw on dir, on addr or, when addr is "", a free port.
func startVersitygw(bin, dir, access, secret, addr string) (*Server, error) {
	if addr == "" {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		addr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	var out syncBuffer
	cmd := exec.Command(bin, "--access", access, "--secret", secret, "--port", addr, "--quiet", "posix", dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	endpoint := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-exited:
			return nil, fmt.Errorf("exited before it answered on %s: %s", addr, out.String())
		default:
		}
		// Any HTTP answer (403 to an unsigned request) means it serves.
		if resp, err := client.Get(endpoint + "/"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("no answer on %s within 30 s: %s", addr, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	s := &Server{
		Endpoint: endpoint,
		Env:      map[string]string{"AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret},
		Dir:      dir,
		PID:      cmd.Process.Pid,
		stop:     stop,
	}
	s.restart = func() (func(), error) {
		var lastErr error
		for try := 0; try < 20; try++ { // the old process's socket may linger a moment
			again, err := startVersitygw(bin, dir, access, secret, addr)
			if err == nil {
				return again.stop, nil
			}
			lastErr = err
			time.Sleep(100 * time.Millisecond)
		}
		return nil, lastErr
	}
	s.URI = s.URIFor(Prefix)
	return s, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer collects the server's output, written by exec's copying goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(bytes.TrimSpace(b.buf.Bytes()))
}

// Op names an S3 request by its method, query and headers as the server routes it (PutObject,
// UploadPartCopy, ListObjectsV2...): for tests that count or fail requests behind a Proxy.
func Op(r *http.Request) string {
	q := r.URL.Query()
	copySrc := r.Header.Get("X-Amz-Copy-Source") != ""
	switch {
	case r.Method == http.MethodPut && q.Has("partNumber") && copySrc:
		return "UploadPartCopy"
	case r.Method == http.MethodPut && copySrc:
		return "CopyObject"
	case r.Method == http.MethodPut && q.Has("partNumber"):
		return "UploadPart"
	case r.Method == http.MethodPut:
		return "PutObject"
	case r.Method == http.MethodPost && q.Has("uploads"):
		return "CreateMultipartUpload"
	case r.Method == http.MethodPost && q.Has("uploadId"):
		return "CompleteMultipartUpload"
	case r.Method == http.MethodPost && q.Has("delete"):
		return "DeleteObjects"
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		return "AbortMultipartUpload"
	case r.Method == http.MethodGet && q.Has("uploads"):
		return "ListMultipartUploads"
	case r.Method == http.MethodGet && q.Get("list-type") == "2":
		return "ListObjectsV2"
	case r.Method == http.MethodGet:
		return "GetObject"
	case r.Method == http.MethodHead:
		return "HeadObject"
	}
	return r.Method
}

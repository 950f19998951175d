package s3store

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// recorded is one request as the server saw it: its operation, headers and body.
type recorded struct {
	op     string
	header http.Header
	body   []byte
}

// recorder keeps every request that reaches the wrapped server.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

func (rec *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{op: s3test.Op(r), header: r.Header.Clone(), body: body})
		rec.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

func (rec *recorder) all() []recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]recorded(nil), rec.reqs...)
}

func (rec *recorder) count(op string) int {
	n := 0
	for _, r := range rec.all() {
		if r.op == op {
			n++
		}
	}
	return n
}

func payload(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func openStore(t testing.TB, srv *s3test.Server, prefix string, opts Options) *Store {
	t.Helper()
	s, err := OpenWith(t.Context(), srv.URIFor(prefix), s3test.Getenv(srv.Env), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeAll writes data in pieces of piece bytes, as the sinks do.
func writeAll(w store.Writer, data []byte, piece int) error {
	for rest := data; len(rest) > 0; {
		n := min(len(rest), piece)
		if _, err := w.Write(rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// discardServer is a minimal S3 endpoint that keeps nothing: it answers the calls a writer
// makes and counts the bytes it received per key, so tests can push gigabytes through
// writers without the server's memory in the way of measuring the client's.
type discardServer struct {
	uploads atomic.Int64
	mu      sync.Mutex
	bytes   map[string]int64 // per key, summed over parts
}

func (d *discardServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/")
	switch s3test.Op(r) {
	case "ListObjectsV2":
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>rekey</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>`)
	case "CreateMultipartUpload":
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>rekey</Bucket><Key>%s</Key><UploadId>u%d</UploadId></InitiateMultipartUploadResult>`, key, d.uploads.Add(1))
	case "UploadPart", "PutObject":
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d.mu.Lock()
		d.bytes[key] += n
		d.mu.Unlock()
		// An ETag of the part's number and size: no MD5, whose cost would be the server's.
		w.Header().Set("ETag", fmt.Sprintf(`"%s-%d"`, r.URL.Query().Get("partNumber"), n))
	case "CompleteMultipartUpload":
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult><Bucket>rekey</Bucket><Key>%s</Key><ETag>"x-1"</ETag></CompleteMultipartUploadResult>`, key)
	default:
		http.Error(w, "not in the discard server", http.StatusNotImplemented)
	}
}

func contentMD5(body []byte) string {
	sum := md5.Sum(body)
	return base64.StdEncoding.EncodeToString(sum[:])
}

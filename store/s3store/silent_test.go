package s3store

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
)

// An endpoint that accepts the connection and never answers (a hung gateway, another service on
// the port) fails Open once its probe moved no byte for StallTimeout, naming the endpoint and
// saying it does not answer and what to do: before, the probe was tried 5 times with backoff,
// each waiting the stall timeout (over 5 minutes with the defaults), before the command said a
// word.
func TestOpenOfASilentEndpointFailsAfterOneStall(t *testing.T) {
	var requests atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		<-release
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	env := func(k string) string {
		return map[string]string{"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}[k]
	}
	done := make(chan error, 1)
	go func() {
		_, err := OpenWith(t.Context(), "s3://bkt/out?region=us-east-1&endpoint="+srv.URL, env, Options{StallTimeout: 200 * time.Millisecond})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a store whose endpoint never answers opened")
		}
		t.Log(err)
		if n := requests.Load(); n != 1 {
			t.Errorf("the probe was sent %d times to an endpoint that never answered it, want once", n)
		}
		if !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "does not answer") || !pipeline.Unreachable(err) {
			t.Errorf("open of a silent endpoint: %v; want the endpoint named, said not to answer, as a server that could not be reached", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Open still waits for a silent endpoint a minute after its 200ms stall timeout")
	}
}

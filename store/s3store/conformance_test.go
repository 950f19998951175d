package s3store

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store/s3test"
	"github.com/rekey/rekey/store/storetest"
)

// prefixes gives every subtest of the suite its own prefix on one server: the suite then also
// checks that a store sees nothing of its neighbours (List, Sweep).
var prefixes atomic.Int64

func runConformance(t *testing.T, srv *s3test.Server, opts Options) {
	storetest.Run(t, func(t *testing.T) store.Store {
		uri := srv.URIFor(fmt.Sprintf("run-%d/out", prefixes.Add(1)))
		s, err := OpenWith(t.Context(), uri, s3test.Getenv(srv.Env), opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// The suite with the smallest parts S3 allows, so its 6 and 11 MiB objects take the multipart
// path (several parts, a spool rotated while uploads run), and with the default 8 MiB parts.
func TestConformanceGofakes3(t *testing.T) {
	srv := s3test.StartGofakes3(t, nil)
	t.Run("MinParts", func(t *testing.T) { runConformance(t, srv, Options{PartSize: 5 << 20}) })
	t.Run("Default", func(t *testing.T) { runConformance(t, srv, Options{}) })
}

func TestConformanceVersitygw(t *testing.T) {
	srv := s3test.StartVersitygw(t)
	t.Run("MinParts", func(t *testing.T) { runConformance(t, srv, Options{PartSize: 5 << 20}) })
	t.Run("Default", func(t *testing.T) { runConformance(t, srv, Options{}) })
}

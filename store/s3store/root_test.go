package s3store

import (
	"testing"

	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store/s3test"
	"github.com/rekey/rekey/store/storetest"
)

// A store at the bucket's root (s3://bucket, no prefix) lists the whole bucket, and must not
// show the server's own bookkeeping there: versitygw keeps unfinished uploads under .sgwtmp/.
func TestConformanceBucketRootVersitygw(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		srv := s3test.StartVersitygw(t)
		s, err := OpenWith(t.Context(), srv.URIFor(""), s3test.Getenv(srv.Env), Options{PartSize: 5 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestConformanceBucketRootGofakes3(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		srv := s3test.StartGofakes3(t, nil)
		s, err := OpenWith(t.Context(), srv.URIFor(""), s3test.Getenv(srv.Env), Options{PartSize: 5 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if s.Location("x") != "s3://rekey/x" {
			t.Fatalf("Location at the root = %q", s.Location("x"))
		}
		return s
	})
}

package s3store

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/rekey/rekey/store/s3store/s3test"
)

// BenchmarkWrite streams 64 MiB objects through 4 writers at once, in 64 KiB writes as the
// sinks make them, to a real server on loopback (versitygw, which writes to the disk), to a
// server that discards (the client's own cost), and, for comparison, to local files.
func BenchmarkWrite(b *testing.B) {
	const size, writers = 64 << 20, 4
	chunk := payload(1, 64<<10)
	run := func(b *testing.B, create func(i int) (interface {
		Write([]byte) (int, error)
	}, func() error)) {
		b.SetBytes(size * writers)
		for n := 0; n < b.N; n++ {
			errs := make(chan error, writers)
			for i := 0; i < writers; i++ {
				go func(i int) {
					w, commit := create(n*writers + i)
					for written := 0; written < size; written += len(chunk) {
						if _, err := w.Write(chunk); err != nil {
							errs <- err
							return
						}
					}
					errs <- commit()
				}(i)
			}
			for i := 0; i < writers; i++ {
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	store := func(b *testing.B, srv *s3test.Server) {
		s := openStore(b, srv, "bench", Options{})
		run(b, func(i int) (interface{ Write([]byte) (int, error) }, func() error) {
			w, err := s.Create(b.Context(), fmt.Sprintf("data/region-%04d/part-00000.parquet", i))
			if err != nil {
				b.Fatal(err)
			}
			return w, func() error { _, err := w.Commit(b.Context()); return err }
		})
	}
	b.Run("versitygw", func(b *testing.B) { store(b, s3test.StartVersitygw(b)) })
	b.Run("discard", func(b *testing.B) {
		d := &discardServer{bytes: map[string]int64{}}
		store(b, s3test.StartGofakes3(b, func(http.Handler) http.Handler { return d }))
	})
	b.Run("local", func(b *testing.B) {
		dir := b.TempDir()
		run(b, func(i int) (interface{ Write([]byte) (int, error) }, func() error) {
			f, err := os.Create(filepath.Join(dir, fmt.Sprint(i)))
			if err != nil {
				b.Fatal(err)
			}
			return f, func() error {
				if err := f.Sync(); err != nil {
					return err
				}
				return f.Close()
			}
		})
	})
}

package replicate

import (
	"net"
	"net/http"
	"time"
)

// Serve serves Handler (/metrics and /healthz) on addr ("host:port", ":9464") until stop is
// called: the address it listens on (a port 0 resolved), or the error of listening on addr.
func (r *Replicator) Serve(addr string) (net.Addr, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: r.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return ln.Addr(), func() { srv.Close() }, nil
}

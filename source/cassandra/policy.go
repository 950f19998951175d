package cassandra

import (
	"context"
	"sort"
	"sync"

	"github.com/gocql/gocql"
	"go.uber.org/zap"
)

// hostPolicy wraps gocql's host selection policy (token-aware over DC-aware round robin). It
// keeps the hosts gocql knows, and lets a query be pinned to one host through its context:
// system.local, system.peers and system.size_estimates are per-node tables, so the ring must be
// read from one node and the size estimates from each.
type hostPolicy struct {
	gocql.HostSelectionPolicy
	// dc, when set, is the only data center the table's reads (inDC) go to: gocql's DC-aware
	// policy goes on to the other data centers' nodes once the local ones cannot answer
	dc    string
	mu    sync.Mutex
	hosts map[string]*gocql.HostInfo // by host ID
}

type pinKey struct{}
type preferKey struct{}
type dcOnlyKey struct{}

// inDC returns a context whose queries go to the nodes of the source's data center (dc=) only:
// the table's reads. Metadata (the schema, the data centers dc= is checked against) is read
// from any node.
func inDC(ctx context.Context) context.Context { return context.WithValue(ctx, dcOnlyKey{}, true) }

// pinned returns a context whose queries go to host h only.
func pinned(ctx context.Context, h *gocql.HostInfo) context.Context {
	return context.WithValue(ctx, pinKey{}, h)
}

// preferring returns a context whose queries go to host h first, when it is up, then to the
// hosts the wrapped policy picks: a token range is read from a node that owns it.
func preferring(ctx context.Context, h *gocql.HostInfo) context.Context {
	if h == nil {
		return ctx
	}
	return context.WithValue(ctx, preferKey{}, h)
}

// host returns the known host with this ID, or nil.
func (p *hostPolicy) host(id string) *gocql.HostInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hosts[id]
}

func newHostPolicy(inner gocql.HostSelectionPolicy, dc string) *hostPolicy {
	return &hostPolicy{HostSelectionPolicy: inner, dc: dc, hosts: map[string]*gocql.HostInfo{}}
}

func (p *hostPolicy) AddHost(h *gocql.HostInfo) {
	p.mu.Lock()
	p.hosts[h.HostID()] = h
	p.mu.Unlock()
	p.HostSelectionPolicy.AddHost(h)
}

// AddHosts lets gocql add the initial hosts at once (the token-aware policy rebuilds its ring
// once instead of once per host).
func (p *hostPolicy) AddHosts(hs []*gocql.HostInfo) {
	p.mu.Lock()
	for _, h := range hs {
		p.hosts[h.HostID()] = h
	}
	p.mu.Unlock()
	if b, ok := p.HostSelectionPolicy.(interface{ AddHosts([]*gocql.HostInfo) }); ok {
		b.AddHosts(hs)
		return
	}
	for _, h := range hs {
		p.HostSelectionPolicy.AddHost(h)
	}
}

func (p *hostPolicy) RemoveHost(h *gocql.HostInfo) {
	p.mu.Lock()
	delete(p.hosts, h.HostID())
	p.mu.Unlock()
	p.HostSelectionPolicy.RemoveHost(h)
}

// Hosts lists the known hosts: up hosts of the local data center first, then by address.
func (p *hostPolicy) Hosts() []*gocql.HostInfo {
	p.mu.Lock()
	out := make([]*gocql.HostInfo, 0, len(p.hosts))
	for _, h := range p.hosts {
		out = append(out, h)
	}
	p.mu.Unlock()
	rank := func(h *gocql.HostInfo) int {
		r := 0
		if !h.IsUp() {
			r += 2
		}
		if !p.IsLocal(h) {
			r++
		}
		return r
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := rank(out[i]), rank(out[j]); a != b {
			return a < b
		}
		return out[i].ConnectAddress().String() < out[j].ConnectAddress().String()
	})
	return out
}

type selected struct{ h *gocql.HostInfo }

func (s selected) Info() *gocql.HostInfo { return s.h }
func (s selected) Mark(error)            {}

func (p *hostPolicy) Pick(q gocql.ExecutableQuery) gocql.NextHost {
	if q != nil {
		if only, _ := q.Context().Value(dcOnlyKey{}).(bool); !only || p.dc == "" {
			return p.pick(q)
		}
	}
	if q == nil || p.dc == "" {
		return p.pick(q)
	}
	next := p.pick(q)
	return func() gocql.SelectedHost {
		for {
			s := next()
			if s == nil || s.Info() == nil || s.Info().DataCenter() == p.dc {
				return s
			}
		}
	}
}

// pick is Pick in any data center.
func (p *hostPolicy) pick(q gocql.ExecutableQuery) gocql.NextHost {
	if q != nil {
		if h, ok := q.Context().Value(pinKey{}).(*gocql.HostInfo); ok {
			done := false
			return func() gocql.SelectedHost {
				if done {
					return nil
				}
				done = true
				return selected{h}
			}
		}
	}
	if q != nil {
		if h, ok := q.Context().Value(preferKey{}).(*gocql.HostInfo); ok && h.IsUp() && p.IsLocal(h) {
			var rest gocql.NextHost
			first := true
			return func() gocql.SelectedHost {
				if first {
					first = false
					return selected{h}
				}
				if rest == nil {
					rest = p.HostSelectionPolicy.Pick(q)
				}
				for {
					s := rest()
					if s == nil || s.Info() != h {
						return s
					}
				}
			}
		}
	}
	return p.HostSelectionPolicy.Pick(q)
}

// gocqlLogger sends gocql's own log lines to zap at Debug level: reconnects and the like are
// routine for a scan, and the source logs what matters (retries, failed ranges) itself.
type gocqlLogger struct{ l *zap.SugaredLogger }

func (g gocqlLogger) Print(v ...any)                 { g.l.Debug(v...) }
func (g gocqlLogger) Printf(format string, v ...any) { g.l.Debugf(format, v...) }
func (g gocqlLogger) Println(v ...any)               { g.l.Debug(v...) }

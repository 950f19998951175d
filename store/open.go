package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Opener opens a store from a URI of its scheme ("s3://bucket/prefix?endpoint=..."). env reads
// the environment, where credentials come from; nothing secret is ever in the URI.
type Opener func(ctx context.Context, uri string, env func(string) string) (Store, error)

var (
	openersMu sync.Mutex
	openers   = map[string]Opener{}
)

// Register makes Open hand URIs of scheme ("s3", "oss") to open. cmd/rekey calls it once for
// each object store it is built with: no package registers itself from an init function.
func Register(scheme string, open Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	openers[scheme] = open
}

// Open returns the store --out names: a local folder for a path, an object store for a
// registered scheme (s3://, oss://). A URI of any other scheme is refused, so that "mysql://x"
// never becomes a local folder named "mysql:". opts set up a local folder (an object store has no
// file modes).
func Open(ctx context.Context, uri string, env func(string) string, opts ...LocalOption) (Store, error) {
	if uri == "" {
		return nil, fmt.Errorf("store: no location given")
	}
	scheme, _, ok := strings.Cut(uri, "://")
	if !ok || strings.ContainsAny(scheme, `/\`) {
		return NewLocal(uri, opts...)
	}
	openersMu.Lock()
	open := openers[strings.ToLower(scheme)]
	openersMu.Unlock()
	if open == nil {
		if slices.Contains(objectSchemes, strings.ToLower(scheme)) {
			return nil, fmt.Errorf("%w: %s:// output is not built into this rekey yet; --out takes a local directory", ErrUnsupported, scheme)
		}
		return nil, fmt.Errorf("%w: rekey does not write to %s:// outputs; --out takes a local directory, s3://BUCKET/PREFIX or oss://BUCKET/PREFIX", ErrUnsupported, scheme)
	}
	return open(ctx, uri, env)
}

// ErrUnsupported is wrapped by Open's error for a URI scheme rekey cannot write to: a usage
// error.
var ErrUnsupported = fmt.Errorf("unsupported output")

// UsageError is an Opener's error for what the user gives wrong (the URI, a setting missing
// from the environment) rather than a failure of the store: the same command fails again until
// the user fixes it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// IsUsage tells whether err is, or wraps, a UsageError or ErrUnsupported.
func IsUsage(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue) || errors.Is(err, ErrUnsupported)
}

// objectSchemes are the object stores rekey knows of, whether this build registered them or not.
var objectSchemes = []string{"s3", "oss"}

// IsLocation tells whether uri names a store rather than something else a flag may take (a
// table's mysql://): a local folder (a path, file:), or a prefix in an object store (IsBucket).
func IsLocation(uri string) bool {
	scheme, _, _ := strings.Cut(uri, "://")
	return IsLocal(uri) || strings.EqualFold(scheme, "file") || IsBucket(uri)
}

// IsBucket tells whether uri names a prefix in an object store rekey knows of (s3://, oss://, and
// any registered), whether this build registered it or not (Open says which).
func IsBucket(uri string) bool {
	scheme, _, ok := strings.Cut(uri, "://")
	if !ok {
		return false
	}
	scheme = strings.ToLower(scheme)
	openersMu.Lock()
	defer openersMu.Unlock()
	return slices.Contains(objectSchemes, scheme) || openers[scheme] != nil
}

// Child is the location of name under uri: a folder inside a local folder (whose name may hold
// a '?'), or the prefix under a bucket's (before its query).
func Child(uri, name string) string {
	if IsLocal(uri) {
		return strings.TrimSuffix(uri, "/") + "/" + name
	}
	base, query, _ := strings.Cut(uri, "?")
	joined := strings.TrimSuffix(base, "/") + "/" + name
	if query != "" {
		joined += "?" + query
	}
	return joined
}

// IsLocal tells whether uri names a local folder (no scheme).
func IsLocal(uri string) bool {
	scheme, _, ok := strings.Cut(uri, "://")
	return !ok || strings.ContainsAny(scheme, `/\`)
}

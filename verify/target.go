// Package verify implements `rekey verify`: it re-reads a source, rewrites every key exactly as
// migrate did and checks that the target (a rekey output folder or a SQL table) holds those rows.
package verify

import (
	"context"

	"github.com/rekey/rekey/pipeline"
)

// LookupTarget is a table verify reads rows from by key.
type LookupTarget interface {
	// MaxKeys is the most keys one Lookup takes (Lindorm multi-get: 2,000).
	MaxKeys() int
	// Lookup returns the rows stored under keys (keys[i]: the key columns' values, in key order,
	// typed as the target schema says) in the same order: nil where no row exists. Values follow
	// pipeline.Value's conventions for the target schema's types (see docs/internals.md "Values").
	Lookup(ctx context.Context, keys [][]pipeline.Value) ([][]pipeline.Value, error)
	Close() error
}

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

// RangeScanner is a LookupTarget that also reads its rows by key range. When the table holds
// about as many rows as the source has keys, verify reads it whole in ranges rather than looking
// each key up (a fraction of the server's work), and looks up only the keys the ranges did not
// give; the verdicts are the lookups' (rows of keys the source has not are passed over).
type RangeScanner interface {
	// Scan calls fn with every row whose key lies in kr (bounds in the table's key order; the
	// zero KeyRange is the whole table), values as Lookup returns them. fn must not keep row.
	Scan(ctx context.Context, kr pipeline.KeyRange, fn func(row []pipeline.Value) error) error
}

package output

import (
	"context"
	"fmt"

	"github.com/rekey/rekey/store"
)

// File is one of the final files a run writes beside data/ before its manifest: the table's
// DDL and the bulkload job (sink/lindorm's Finals makes them).
type File struct {
	Name string // DDLFile, BulkloadFile
	Data []byte
}

// Finish writes the final files of a run whose source was read to its end, beside data/:
// files in the order given, then the manifest m, each atomically, the manifest last (its
// presence marks a complete run).
func (o *Output) Finish(ctx context.Context, m *Manifest, files ...File) error {
	for _, f := range files {
		if err := o.Store.Put(ctx, f.Name, f.Data); err != nil {
			return fmt.Errorf("write %s: %w", f.Name, err)
		}
	}
	return WriteManifest(ctx, o.Store, m)
}

// InBucket tells whether location, an output as --out gives it or as a store names it
// (Location), is a prefix of an object store (s3://, oss://) rather than a local folder: a
// bulkload job reads it by its URL, not by a path.
func InBucket(location string) bool { return !store.IsLocal(location) }

// Finished tells whether the output holds a complete run: its manifest was written.
func (o *Output) Finished(ctx context.Context) (bool, error) {
	_, err := o.Store.Stat(ctx, ManifestFile)
	switch {
	case err == nil:
		return true, nil
	case store.IsNotExist(err):
		return false, nil
	}
	return false, err
}

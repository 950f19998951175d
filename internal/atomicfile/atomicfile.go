// Package atomicfile holds the two primitives of a file committed whole on a local disk, shared
// by the local store (store) and the helpers that write files beside no store (pipeline's
// WriteFileAtomic): the temporary name a file has until it is committed, and the fsync of a
// folder that makes a rename inside it durable.
package atomicfile

import (
	"fmt"
	"os"
)

// TempPrefix starts the name of every file rekey has not committed yet. A reader that skips
// dot-files (Spark, LTS) never sees a partial file, and a resume's sweep deletes leftovers with it.
const TempPrefix = ".rekey-tmp-"

// SyncDir fsyncs a folder, making renames and creations inside it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

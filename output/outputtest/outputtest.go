// Package outputtest reads a local output folder for tests: its manifest and its checkpoint,
// through the same code (package output) that rekey reads them with.
package outputtest

import (
	"context"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// Manifest reads the manifest.json of the folder dir.
func Manifest(dir string) (*output.Manifest, error) {
	st, err := store.NewLocal(dir)
	if err != nil {
		return nil, err
	}
	return output.ReadManifest(context.Background(), st)
}

// WriteManifest writes m as the manifest.json of the folder dir.
func WriteManifest(dir string, m *output.Manifest) error {
	st, err := store.NewLocal(dir)
	if err != nil {
		return err
	}
	return output.WriteManifest(context.Background(), st, m)
}

// Checkpoint reads the checkpoint.json of the folder dir: (nil, nil) when there is none.
func Checkpoint(dir string) (*pipeline.Checkpoint, error) {
	st, err := store.NewLocal(dir)
	if err != nil {
		return nil, err
	}
	return output.ReadCheckpoint(context.Background(), st)
}

package output

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/store"
)

// ManifestFile, DDLFile and BulkloadFile are what a finished run writes beside data/: the
// manifest (its presence marks a complete run), the table's DDL and the LTS bulkload job.
const (
	ManifestFile = "manifest.json"
	DDLFile      = "ddl.sql"
	BulkloadFile = "bulkload.json"
)

// WriteManifest writes manifest.json into the output st atomically.
func WriteManifest(ctx context.Context, st store.Store, m *lindorm.Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("lindorm: encode manifest: %w", err)
	}
	if err := st.Put(ctx, ManifestFile, append(data, '\n')); err != nil {
		return fmt.Errorf("lindorm: write manifest: %w", err)
	}
	return nil
}

// ReadManifest reads manifest.json from the output st; a missing one wraps store.ErrNotExist.
func ReadManifest(ctx context.Context, st store.Store) (*lindorm.Manifest, error) {
	data, err := st.Get(ctx, ManifestFile)
	if err != nil {
		return nil, fmt.Errorf("lindorm: read manifest: %w", err)
	}
	var m lindorm.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("lindorm: parse %s: %w", st.Location(ManifestFile), err)
	}
	if err := CheckManifestPaths(&m); err != nil {
		return nil, fmt.Errorf("lindorm: %s: %w", st.Location(ManifestFile), err)
	}
	return &m, nil
}

// CheckManifestPaths refuses a manifest listing a file outside its own output directory (see
// CheckRelPath): whoever reads one follows its paths to link, copy or move files.
func CheckManifestPaths(m *lindorm.Manifest) error {
	for i, r := range m.Regions {
		for _, f := range r.Files {
			if err := CheckRelPath(f.Path); err != nil {
				return fmt.Errorf("region %d: %w; a manifest lists files inside its own output directory only: was it edited, or written by another tool?", i, err)
			}
		}
	}
	return nil
}

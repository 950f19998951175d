package output

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/rekey/rekey/pipeline"
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
func WriteManifest(ctx context.Context, st store.Store, m *Manifest) error {
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
func ReadManifest(ctx context.Context, st store.Store) (*Manifest, error) {
	data, err := st.Get(ctx, ManifestFile)
	if err != nil {
		return nil, fmt.Errorf("lindorm: read manifest: %w", err)
	}
	var m Manifest
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
func CheckManifestPaths(m *Manifest) error {
	for i, r := range m.Regions {
		for _, f := range r.Files {
			if err := CheckRelPath(f.Path); err != nil {
				return fmt.Errorf("region %d: %w; a manifest lists files inside its own output directory only: was it edited, or written by another tool?", i, err)
			}
		}
	}
	return nil
}

// Manifest describes a run's output: what was migrated, how the table is split and which files
// hold each region. Field names are stable (snake_case); see sink/README.md.
type Manifest struct {
	Mapping            string       `json:"mapping"`
	MappingFingerprint string       `json:"mapping_fingerprint"`
	Table              string       `json:"table"`
	Format             string       `json:"format"`
	KeyColumns         []KeyColumn  `json:"key_columns"`
	Columns            []ColumnInfo `json:"columns"`
	Plan               PlanInfo     `json:"region_plan"`
	// RegionSize is the configured region size in bytes (0: not set); a region whose files add
	// up to more is flagged over_size.
	RegionSize int64        `json:"region_size"`
	Regions    []RegionInfo `json:"regions"`

	RowsIn       int64 `json:"rows_in"`
	RowsWritten  int64 `json:"rows_written"`
	RowsRejected int64 `json:"rows_rejected"`
	// RowsSkipped are rows a catch-up (a Cassandra source's since=) read and left out as older,
	// or a replication's events of other tables than the mapping's source.table:
	// rows_in = rows_written + rows_rejected + rows_skipped.
	RowsSkipped int64 `json:"rows_skipped,omitempty"`
	// NextSince is the since= of the next catch-up of a Cassandra source: this run's start less
	// a margin for clock skew.
	NextSince *time.Time `json:"next_since,omitempty"`
	Bytes     int64      `json:"bytes"`
	Files     int        `json:"files"`

	CreatedAt    time.Time `json:"created_at"`
	RekeyVersion string    `json:"rekey_version"`
}

// KeyColumn is one primary-key column, in key order.
type KeyColumn struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Position int    `json:"position"`
	Desc     bool   `json:"desc"`
}

// ColumnInfo is one target column, in file order.
type ColumnInfo struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Key  bool   `json:"key"`
}

// PlanInfo is the region plan: split values rendered as strings (pipeline.SplitValue).
type PlanInfo struct {
	Strategy string   `json:"strategy"`
	Type     string   `json:"type"`
	Desc     bool     `json:"desc"`
	Regions  int      `json:"regions"`
	Splits   []string `json:"splits"`
}

// RegionInfo is one region: its bounds over the first key column (null for the open ends), what
// was written to it and whether it exceeds the region size.
type RegionInfo struct {
	Index    int         `json:"index"`
	Start    *string     `json:"start"`
	End      *string     `json:"end"`
	Rows     int64       `json:"rows"`
	Bytes    int64       `json:"bytes"`
	OverSize bool        `json:"over_size"`
	Files    []FileEntry `json:"files"`
}

// FileEntry is one data file, path relative to the output directory (slash-separated).
type FileEntry struct {
	Path  string `json:"path"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// NewManifest starts a manifest for a schema, plan and format with every region listed and no
// files. regionSize is the configured region size in bytes (0: none).
func NewManifest(schema pipeline.TargetSchema, plan pipeline.RegionPlan, format string, regionSize int64) *Manifest {
	m := &Manifest{Table: schema.Table, Format: format, RegionSize: regionSize, CreatedAt: time.Now().UTC()}
	for _, c := range schema.Columns {
		m.Columns = append(m.Columns, ColumnInfo{Name: c.Name, Type: c.SQLType(), Key: c.IsKey()})
	}
	for i, c := range schema.Key() {
		m.KeyColumns = append(m.KeyColumns, KeyColumn{Name: c.Name, Type: c.SQLType(), Position: i, Desc: c.Desc})
	}
	m.Plan = PlanInfo{Strategy: plan.Strategy, Type: plan.Type.String(), Desc: plan.Desc, Regions: plan.Count(), Splits: []string{}}
	for _, v := range plan.Splits {
		m.Plan.Splits = append(m.Plan.Splits, pipeline.SplitValue(plan.Type, v))
	}
	for i := 0; i < plan.Count(); i++ {
		r := RegionInfo{Index: i, Files: []FileEntry{}}
		if i > 0 {
			s := m.Plan.Splits[i-1]
			r.Start = &s
		}
		if i < len(m.Plan.Splits) {
			e := m.Plan.Splits[i]
			r.End = &e
		}
		m.Regions = append(m.Regions, r)
	}
	return m
}

// AddFiles records committed files (Sink.Commit's result) and updates the region and run totals
// and the over_size flags.
func (m *Manifest) AddFiles(infos []pipeline.FileInfo) error {
	for _, fi := range infos {
		if fi.Region < 0 || fi.Region >= len(m.Regions) {
			return fmt.Errorf("manifest: file %s has region %d, the manifest has %d", fi.Path, fi.Region, len(m.Regions))
		}
		r := &m.Regions[fi.Region]
		r.Files = append(r.Files, FileEntry{Path: fi.Path, Rows: fi.Rows, Bytes: fi.Bytes})
		r.Rows += fi.Rows
		r.Bytes += fi.Bytes
		r.OverSize = m.RegionSize > 0 && r.Bytes > m.RegionSize
		m.Bytes += fi.Bytes
		m.Files++
	}
	for i := range m.Regions {
		sort.Slice(m.Regions[i].Files, func(a, b int) bool { return m.Regions[i].Files[a].Path < m.Regions[i].Files[b].Path })
	}
	return nil
}

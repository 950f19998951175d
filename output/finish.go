package output

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/store"
)

// Table is what the final files of a run say about the table it was written for.
type Table struct {
	Schema      pipeline.TargetSchema
	Options     [][2]string // the mapping's table options, for the DDL
	Mapping     string      // the mapping's name
	Fingerprint string      // of the resolved mapping
	RegionSize  int64       // the configured region size in bytes (0: none)
	Version     string      // rekey's, recorded in the manifest
}

// Finish writes the final files of a run whose source was read to its end, beside data/:
// ddl.sql, bulkload.json and manifest.json, each atomically, the manifest last (its presence
// marks a complete run). nextSince, when not zero, is the since= of the next catch-up. It
// returns the manifest and the bulkload job it wrote.
func (o *Output) Finish(ctx context.Context, t Table, plan pipeline.RegionPlan, format string, res pipeline.Result,
	nextSince time.Time, jobOpt lindorm.JobOptions) (*lindorm.Manifest, *lindorm.BulkloadJob, error) {
	m := lindorm.NewManifest(t.Schema, plan, format, t.RegionSize)
	m.Mapping, m.MappingFingerprint, m.RekeyVersion = t.Mapping, t.Fingerprint, t.Version
	if err := m.AddFiles(res.Files); err != nil {
		return nil, nil, err
	}
	m.RowsIn, m.RowsWritten, m.RowsRejected, m.RowsSkipped = res.RowsIn, res.RowsWritten, res.RowsRejected, res.RowsSkipped
	if !nextSince.IsZero() {
		m.NextSince = &nextSince
	}
	ddl, err := lindorm.DDL(t.Schema, plan, t.Options)
	if err != nil {
		return nil, nil, fmt.Errorf("write %s: %w", DDLFile, err)
	}
	if err := o.Store.Put(ctx, DDLFile, []byte(ddl+"\n")); err != nil {
		return nil, nil, fmt.Errorf("write %s: %w", DDLFile, err)
	}
	jobOpt.Regions, jobOpt.Timestamp, jobOpt.DataDir = plan.Count(), res.StartedAt, DataDir
	jobOpt.Store = jobOpt.Store || !store.IsLocal(jobOpt.Out) // --out s3://, oss://: the job reads the bucket
	job, err := lindorm.NewBulkloadJob(t.Schema, jobOpt)
	if err != nil {
		return nil, nil, fmt.Errorf("bulkload config: %w", err)
	}
	data, err := json.MarshalIndent(job, "", "  ")
	if err != nil {
		return nil, nil, fmt.Errorf("bulkload config: %w", err)
	}
	if err := o.Store.Put(ctx, BulkloadFile, append(data, '\n')); err != nil {
		return nil, nil, fmt.Errorf("write %s: %w", BulkloadFile, err)
	}
	return m, job, WriteManifest(ctx, o.Store, m)
}

// JobLocation is opt with where its bulkload job reads the output st from: out (--out as given)
// unless opt names it already, an object store's prefix or a folder, and the data folder.
func JobLocation(opt lindorm.JobOptions, st store.Store, out string) lindorm.JobOptions {
	if opt.Out == "" {
		opt.Out = out
	}
	if _, local := store.LocalPath(st); !local {
		opt.Store = true
	}
	opt.DataDir = DataDir
	return opt
}

// DataFilePath is readerConfig.filePath of a bulkload job that reads the output st: every
// region folder under its data folder, in its bucket or on this machine.
func DataFilePath(st store.Store) (string, error) {
	loc := st.Location("")
	return lindorm.DataFilePath(loc, DataDir, !store.IsLocal(loc))
}

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

package main

import (
	"path/filepath"
	"testing"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
)

// The checkpoint and manifest of a migration into files in time slices (target.write_time)
// hold what the published schemas describe: each file's newest write time, which stamps its
// slice's bulkload job, and the run's slice width.
func TestJSONSchemasOfARunInTimeSlices(t *testing.T) {
	cas := cassandratest.Open(t)
	seedSliceRows(t, cas, 12)
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", sliceMapping)
	out := filepath.Join(dir, "out")
	mustRun(t, "migrate", "-m", mapping, "--source", cas.URI("wt", "slices", ""), "--out", out, "--regions", "2", "--progress", "never")
	checkSchema(t, "../../docs/schema/checkpoint.json", filepath.Join(out, output.CheckpointFile))
	checkSchema(t, "../../docs/schema/manifest.json", filepath.Join(out, output.ManifestFile))
}

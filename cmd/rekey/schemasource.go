package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/source"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/transform"
)

// loadProgramFor loads and compiles a mapping for a source. For a source whose kind reads its
// own schema (source.Kind.OpenSchema: a Cassandra table) it first opens the source, then
// compiles the mapping against its schema: source.columns may be left out, and a column the
// source lacks, or of another type, is an error before any data moves. The opened source is kept
// for openSource. Other sources: loadProgram. workers is --workers (parts read at once); regions
// is --regions (0: the mapping's; noRegionPlan: the output has none, a SQL table).
// noRegionPlan is loadProgramFor's regions for an output without a region plan (a SQL table): its
// shards need not agree on one.
const noRegionPlan = -1

func (inv *invocation) loadProgramFor(path, uri string, workers, regions int, logger *zap.Logger) (*transform.Program, error) {
	if path == "" || !inv.sources.HasSchema(uri) {
		prog, err := loadProgram(path)                   // with no mapping, the usual message
		if err == nil && prog.WriteTime() && uri != "" { // no source (check, ddl): the mapping alone
			// a file carries the cells' write times in JSON Lines as verify --repair writes
			// them (the file source refuses CSV, and rejects a row without them)
			if !inv.sources.Is(uri, file.Kind.Prefix) {
				return nil, usageError(fmt.Errorf("%s: target.write_time carries Cassandra's cell write times (WRITETIME()), and --source %s has none: read a cassandra:// table (or a verify --repair file of one), or drop target.write_time", path, sourceuri.Redact(uri)))
			}
			inv.sourceCellTimes = true
		}
		return prog, err
	}
	m, err := transform.Load(path)
	if err != nil {
		return nil, usageError(err)
	}
	inv.sourceCellTimes = m.Target.WriteTime
	// no command context here (the callers have none to give): the kinds' hooks connect with
	// timeouts of their own
	src, err := inv.sources.OpenSchema(context.Background(), uri, m.Source.Name, inv.sourceInput(nil, workers, logger))
	if err != nil {
		return nil, sourceOpenExit(err)
	}
	if src.Shard().Count > 1 && regions == 0 && m.Regions != nil && m.Regions.Size > 0 {
		src.Close()
		return nil, usageError(fmt.Errorf("--shard: %s sizes its regions from the table's size estimate (regions.size), which each shard may see differently; every shard must use the same region plan: pass --regions N, or use regions.count or regions.split_keys", path))
	}
	prog, err := transform.Compile(m, src.Schema())
	if err != nil {
		src.Close()
		return nil, usageError(fmt.Errorf("%s against %s: %w", path, src.SchemaOf(), err))
	}
	if ts, ok := src.(interface{ DefaultTTL() int }); ok {
		if err := prog.TakeTableTTL(ts.DefaultTTL()); err != nil {
			src.Close()
			return nil, usageError(fmt.Errorf("%s against %s: %w", path, src.SchemaOf(), err))
		}
	}
	if inv.opened == nil {
		inv.opened = map[string]source.SchemaSource{}
	}
	if old := inv.opened[uri]; old != nil {
		old.Close()
	}
	inv.opened[uri] = src
	return prog, nil
}

// checkedSchema hands out a source that read its own schema if it reads the columns of schema,
// in that order.
func checkedSchema(uri string, src source.SchemaSource, schema pipeline.SourceSchema) (pipeline.Source, error) {
	if !slices.Equal(src.Schema(), schema) {
		src.Close()
		return nil, fmt.Errorf("--source %s: the mapping was not compiled against the table's schema (its columns: %s)", sourceuri.Redact(uri), strings.Join(src.Schema().Names(), ", "))
	}
	return src, nil
}

// closeSource closes a source that holds connections (Cassandra, Kafka).
func closeSource(src pipeline.Source) {
	if c, ok := src.(io.Closer); ok && src != nil {
		c.Close()
	}
}

// refuseWriteTimeInFiles refuses what a migration into bulk-load files with target.write_time
// cannot do: such a run writes one file set and one bulkload job per time slice of the rows' write
// times (each job stamps its cells with its slice's time), which shards do not carry (--shard,
// --shared-out, then rekey merge). --time-slice is refused without target.write_time.
func refuseWriteTimeInFiles(path string, prog *transform.Program, timeSlice time.Duration, shard pipeline.Shard) error {
	if !prog.WriteTime() {
		if timeSlice != 0 {
			return usageError(fmt.Errorf("%s: --time-slice applies only to a mapping with target.write_time (it sets the width of the time slices its files are loaded in); drop it", path))
		}
		return nil
	}
	if timeSlice != 0 && timeSlice < time.Millisecond {
		return usageError(fmt.Errorf("--time-slice %s: a slice is at least 1ms wide (Lindorm timestamps are milliseconds); the default is %s", timeSlice, files.DefaultTimeSlice))
	}
	if !shard.Whole() {
		return usageError(fmt.Errorf("%s: target.write_time writes one file set and bulkload job per time slice of the rows' write times, which "+
			"shards (--shard, --shared-out) and rekey merge do not combine: run the migration without --shard, or write through SQL (--out lindorm://...)", path))
	}
	return nil
}

// refuseWriteTimeInReplicaFiles refuses target.write_time for replicate into files: a replica
// file set is loaded by one bulkload job, which stamps every cell with one timestamp, so the
// cells' own write times cannot reach the table that way.
func refuseWriteTimeInReplicaFiles(path string, prog *transform.Program) error {
	if !prog.WriteTime() {
		return nil
	}
	return usageError(fmt.Errorf("%s: target.write_time writes each cell's Cassandra write time as its Lindorm timestamp, which replicate can set only in SQL writes (UPSERT /*+ _l_ts_(ms) */): "+
		"its files are loaded by one bulkload job stamping every cell with one timestamp. Use --out lindorm://..., or drop target.write_time to replicate into files", path))
}

package main

import (
	"fmt"
	"io"
	"strings"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/transform"
)

func isCassandraURI(uri string) bool { return strings.HasPrefix(uri, cassandra.URIPrefix) }

// loadProgramFor loads and compiles a mapping for a source. For a Cassandra source it first
// connects and reads the table's schema, then compiles the mapping against it: source.columns
// may be left out, and a column the table lacks, or of another type, is an error before any
// data moves. The connected source is kept for openSource. Other sources: loadProgram.
// workers is --workers (ranges read at once); regions is --regions (0: the mapping's).
func (inv *invocation) loadProgramFor(path, uri string, workers, regions int, logger *zap.Logger) (*transform.Program, error) {
	if !isCassandraURI(uri) {
		return loadProgram(path)
	}
	if path == "" {
		return loadProgram(path) // the usual message
	}
	m, err := transform.Load(path)
	if err != nil {
		return nil, usageError(err)
	}
	in := inv.sourceInput(nil, workers, logger)
	in.Flags = inv.sources.Flags(cassandra.URIPrefix)
	if in.Shard, err = inv.sources.Shard(); err != nil {
		return nil, usageError(err)
	}
	cfg, err := cassandra.CommandConfig(uri, m.Source.Name, in)
	if err != nil {
		return nil, usageError(err)
	}
	if cfg.Shard.Count > 1 && regions == 0 && m.Regions != nil && m.Regions.Size > 0 {
		return nil, usageError(fmt.Errorf("--shard: %s sizes its regions from the table's size estimate (regions.size), which each shard may see differently; every shard must use the same region plan: pass --regions N, or use regions.count or regions.split_keys", path))
	}
	src, err := cassandra.New(cfg, logger.Named("source.cassandra"))
	if err != nil {
		return nil, sourceOpenExit(err)
	}
	prog, err := transform.Compile(m, src.Schema())
	if err != nil {
		src.Close()
		return nil, usageError(fmt.Errorf("%s against %s.%s: %w", path, src.Table().Keyspace, src.Table().Name, err))
	}
	if inv.openedCassandra == nil {
		inv.openedCassandra = map[string]*cassandra.Source{}
	}
	if old := inv.openedCassandra[uri]; old != nil {
		old.Close()
	}
	inv.openedCassandra[uri] = src
	return prog, nil
}

// checkedSchema hands out a Cassandra source if it reads the columns of schema, in that order.
func checkedSchema(uri string, src *cassandra.Source, schema pipeline.SourceSchema) (pipeline.Source, error) {
	if !sameSchema(src.Schema(), schema) {
		src.Close()
		return nil, fmt.Errorf("--source %s: the mapping was not compiled against the table's schema (its columns: %s)", sourceuri.Redact(uri), strings.Join(src.Schema().Names(), ", "))
	}
	return src, nil
}

func sameSchema(a, b pipeline.SourceSchema) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// closeSource closes a source that holds connections (Cassandra, Kafka).
func closeSource(src pipeline.Source) {
	if c, ok := src.(io.Closer); ok && src != nil {
		c.Close()
	}
}

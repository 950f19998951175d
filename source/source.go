// Package source is how a command line finds its kind of source: each kind's own package
// (source/file, source/gen, source/cassandra, source/kafka) describes itself as a Kind (the
// --source URIs it reads, its paragraph of the --source help, its flags and how it opens), and
// cmd/rekey lists the kinds it is built with in a Set, which picks one by a URI, as store.Open
// picks a store by --out.
package source

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/sourceuri"
)

// Kind is one kind of source, as its package describes it.
type Kind struct {
	// Prefix starts every --source URI of the kind: "kafka://", "file:".
	Prefix string
	// Match, when set, accepts more URIs of the kind (the file source's s3:// and oss://).
	Match func(uri string) bool
	// Unsharded, when set, is why the kind is not read in shards: --shard is refused with it.
	Unsharded string
	// Paths: a bare path that exists (no scheme) is a source of this kind.
	Paths bool
	// CatchUp: the kind's URIs take since= (only the rows written since then: Cassandra's
	// WRITETIME), so a run prints the since= of the next catch-up.
	CatchUp bool
	// Tables: the kind reads topics of change events that name their table (Debezium's), so a
	// mapping's source.table (Input.SourceTable) applies to it; the other kinds are refused it.
	Tables bool
	// Help is the kind's paragraph of the --source help, indented as --help shows it.
	Help string
	// NewFlags returns the kind's flags for one command line; nil when it has none.
	NewFlags func() Flags
	// Open opens a URI of the kind.
	Open func(ctx context.Context, uri string, in Input) (pipeline.Source, error)
	// OpenSchema, when set, is the kind's schema hook: its sources read their own schema (a
	// Cassandra table's columns and types), and the mapping is compiled against it, so that the
	// mapping may leave its source columns out and a column the source lacks is an error before
	// any data moves. It opens the source before the mapping is compiled (in.Schema is nil);
	// table is the mapping's source name, which names the table when the URI does not. The
	// command then reads the source it returns (Open is not called).
	OpenSchema func(ctx context.Context, uri, table string, in Input) (SchemaSource, error)
}

// SchemaSource is a source opened by its kind's schema hook (Kind.OpenSchema).
type SchemaSource interface {
	pipeline.Source
	io.Closer
	// Schema is the source's columns, as it read them.
	Schema() pipeline.SourceSchema
	// SchemaOf names what the schema is of, in messages: "keyspace.table".
	SchemaOf() string
	// Shard is the part of the source it reads (the zero Shard: all of it).
	Shard() pipeline.Shard
}

// Flags are a kind's flags, bound for one command line.
type Flags interface {
	// Add registers the flags a command of the given use takes on its flag set.
	Add(fs *pflag.FlagSet, use Use)
	// Refuse is the error for flags given to a command whose --source (uri, "" when none) is
	// of another kind, which would ignore them; nil when none is given.
	Refuse(uri string) error
}

// Use says which of a kind's flags a command takes.
type Use struct {
	Scan   bool // the command reads the whole source (--rate)
	Shards bool // the command reads a shard of it (--shard)
}

// Input is what a source opens with besides its URI.
type Input struct {
	Schema pipeline.SourceSchema // the mapping's source columns
	// SourceTable is the mapping's source.table: the table to read of a topic of change events
	// that carries several (Kind.Tables); a kind that reads no such topic is refused it
	SourceTable string
	Flags       Flags               // the kind's, as the command line set them (nil when it has none)
	Getenv      func(string) string // the environment, where credentials come from
	Stdin       io.Reader           // the command's stdin (file:-)
	// StdinTerminal: stdin is a terminal, not data piped in
	StdinTerminal bool
	// Workers is --workers, the parts read at once (0: the kind's default)
	Workers int
	// Shard is --shard's part of the source (the zero Shard: the whole source)
	Shard pipeline.Shard
	// ShardFlag: the command takes --shard and makes a shard's output for it only (migrate),
	// so a kind refuses a shard its URI names otherwise
	ShardFlag bool
	// WriteTimes asks for each row's write time, when the kind can tell it
	WriteTimes bool
	// CellWriteTimes asks for each cell's write time (pipeline.Record.Times): a mapping's
	// target.write_time. Only a Cassandra table has them; the command refuses the others.
	CellWriteTimes bool
	// ParseSize reads a size given on the command line (16MiB), as every size flag does
	ParseSize func(string) (int64, error)
	// Memory is the command's --memory budget (0: it has none): a kind refuses a bound of its
	// own (a record's size) that the budget cannot hold
	Memory int64
	Logger *zap.Logger
}

// Set is the kinds a command line can read, each with its flags bound for that command line.
type Set struct {
	kinds []Kind
	flags []Flags
	shard string // --shard, which every kind but the Unsharded ones reads its part of
}

// NewSet binds kinds' flags for one command line; the --source help lists them in this order.
func NewSet(kinds ...Kind) *Set {
	s := &Set{kinds: kinds, flags: make([]Flags, len(kinds))}
	for i, k := range kinds {
		if k.NewFlags != nil {
			s.flags[i] = k.NewFlags()
		}
	}
	return s
}

// Help is the --source help: every kind's paragraph.
func (s *Set) Help() string {
	parts := []string{"where rows come from:"}
	for _, k := range s.kinds {
		parts = append(parts, k.Help)
	}
	return strings.Join(parts, "\n")
}

// AddFlags registers every kind's flags that a command of the given use takes, and --shard for
// a command that reads a shard.
func (s *Set) AddFlags(fs *pflag.FlagSet, use Use) {
	if use.Shards {
		// no backquotes in a usage string: pflag would take the quoted text as the value's name
		fs.StringVar(&s.shard, "shard", "", "read shard i of N of the source (i/N, e.g. 0/3): Cassandra token ranges, files (each file read whole by one shard, balanced by size; with fewer files than shards, a byte range of every file: JSON Lines, or CSV with multiline=false, not gzip) or gen: rows; refused for kafka:. Run N of them, each with its own --out, then combine them with rekey merge; or all with one --out and --shared-out, then finish them with rekey merge --out")
	}
	for _, f := range s.flags {
		if f != nil {
			f.Add(fs, use)
		}
	}
}

// Refuse is the error for --shard of a kind not read in shards, or flags of a kind other than
// uri's that the command line gave.
func (s *Set) Refuse(uri string) error {
	k := s.find(uri)
	if k >= 0 && s.shard != "" && s.kinds[k].Unsharded != "" {
		return fmt.Errorf("--shard %s: %s", s.shard, s.kinds[k].Unsharded)
	}
	for i, f := range s.flags {
		if f != nil && i != k {
			if err := f.Refuse(uri); err != nil {
				return err
			}
		}
	}
	return nil
}

// Shard is --shard's part of the source: the whole source without it.
func (s *Set) Shard() (pipeline.Shard, error) {
	if s.shard == "" {
		return pipeline.Shard{}, nil
	}
	sh, err := pipeline.ParseShard(s.shard)
	if err != nil {
		return sh, fmt.Errorf("--shard: %w", err)
	}
	return sh, nil
}

// CatchesUp tells whether uri's kind reads the rows written since a time (Kind.CatchUp).
func (s *Set) CatchesUp(uri string) bool {
	k := s.find(uri)
	return k >= 0 && s.kinds[k].CatchUp
}

// Is tells whether uri is a URI of the kind whose prefix is prefix.
func (s *Set) Is(uri, prefix string) bool {
	k := s.find(uri)
	return k >= 0 && s.kinds[k].Prefix == prefix
}

// Flags are the bound flags of the kind whose prefix is prefix (nil when it has none).
func (s *Set) Flags(prefix string) Flags {
	for i, k := range s.kinds {
		if k.Prefix == prefix {
			return s.flags[i]
		}
	}
	return nil
}

// find is the index of uri's kind, -1 when none reads it.
func (s *Set) find(uri string) int {
	if uri == "" {
		return -1
	}
	for i, k := range s.kinds {
		if strings.HasPrefix(uri, k.Prefix) || k.Match != nil && k.Match(uri) {
			return i
		}
	}
	if !strings.Contains(uri, "://") {
		if _, err := os.Stat(uri); err == nil {
			for i, k := range s.kinds {
				if k.Paths {
					return i
				}
			}
		}
	}
	return -1
}

// HasSchema tells whether uri's kind reads its sources' schema (Kind.OpenSchema).
func (s *Set) HasSchema(uri string) bool {
	k := s.find(uri)
	return k >= 0 && s.kinds[k].OpenSchema != nil
}

// OpenSchema opens the source uri names through its kind's schema hook (Kind.OpenSchema), with
// its kind's flags. Call it for a uri HasSchema accepts.
func (s *Set) OpenSchema(ctx context.Context, uri, table string, in Input) (SchemaSource, error) {
	k := s.find(uri)
	if k < 0 || s.kinds[k].OpenSchema == nil {
		return nil, fmt.Errorf("--source %q: its kind does not read its schema", sourceuri.Redact(uri))
	}
	in.Flags = s.flags[k]
	var err error
	if in.Shard, err = s.Shard(); err != nil {
		return nil, err
	}
	return s.kinds[k].OpenSchema(ctx, uri, table, in)
}

// Open opens the source uri names, with its kind's flags.
func (s *Set) Open(ctx context.Context, uri string, in Input) (pipeline.Source, error) {
	if uri == "" {
		return nil, fmt.Errorf("--source is required:\n%s", s.Help())
	}
	k := s.find(uri)
	if k < 0 {
		return nil, fmt.Errorf("--source %q: unknown kind of source\n%s", sourceuri.Redact(uri), s.Help())
	}
	in.Flags = s.flags[k]
	if in.SourceTable != "" && !s.kinds[k].Tables {
		return nil, fmt.Errorf("--source %q: the mapping's source.table (%s) names the table to read of a topic of Debezium change events (kafka://...?format=debezium), "+
			"and this source is no such topic: drop source.table from the mapping", sourceuri.Redact(uri), in.SourceTable)
	}
	var err error
	if in.Shard, err = s.Shard(); err != nil {
		return nil, err
	}
	return s.kinds[k].Open(ctx, uri, in)
}

package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/transform"
)

// cassandraSourceHelp is appended to the --source help of the commands that read sources.
const cassandraSourceHelp = `
  cassandra://host1,host2:9042/keyspace/table?consistency=LOCAL_ONE&dc=dc1&page_size=5000&splits=N
                     a Cassandra table, read by a parallel token-range scan; the columns and their
                     types come from the table's schema (source.columns is optional and, when
                     given, checked). More parameters: workers, rate, writetime=c1,c2, ttl=c1,
                     shard=i/N, retries, timeout, tls=true. Credentials: --cassandra-user (or
                     REKEY_CASSANDRA_USER) and REKEY_CASSANDRA_PASSWORD or --cassandra-password-file.
                     since=2026-11-25T10:00:00Z (or epoch ms or us): a catch-up, only rows with a
                     cell written since then (by WRITETIME); CQL cannot filter on it, so every row
                     is still read and the older ones are counted as skipped. Rows without any
                     regular cell are kept; deletes are not caught up. migrate prints the since=
                     of the next catch-up`

// cassandraFlags are the options of a Cassandra source that do not belong in the URI:
// credentials and TLS files, plus --rate and --shard.
type cassandraFlags struct {
	user         string
	passwordFile string
	tls          bool
	caFile       string
	certFile     string
	keyFile      string
	serverName   string
	skipVerify   bool
	rate         float64
	shard        string
	// rowWriteTimes: report reads each row's WRITETIME() for its write order (not a flag)
	rowWriteTimes bool
}

// addCassandraFlags registers the Cassandra connection flags (credentials, TLS) on a command's
// flag set.
func (inv *invocation) addCassandraFlags(fs *pflag.FlagSet) {
	o := &inv.cassandra
	fs.StringVar(&o.user, "cassandra-user", "", "Cassandra user name (default $"+cassandra.UserEnv+"); the password comes from $"+cassandra.PasswordEnv+" or --cassandra-password-file, never from the command line")
	fs.StringVar(&o.passwordFile, "cassandra-password-file", "", "file holding the Cassandra password (a mounted Kubernetes secret, for example)")
	fs.BoolVar(&o.tls, "cassandra-tls", false, "connect to Cassandra with TLS (implied by the other TLS options)")
	fs.StringVar(&o.caFile, "cassandra-ca", "", "PEM file of the CAs that sign the Cassandra nodes' certificates (default: the system's)")
	fs.StringVar(&o.certFile, "cassandra-cert", "", "client certificate (PEM) for mutual TLS, with --cassandra-key")
	fs.StringVar(&o.keyFile, "cassandra-key", "", "client private key (PEM) for mutual TLS")
	fs.StringVar(&o.serverName, "cassandra-server-name", "", "name to verify in the nodes' certificates (default: the address dialled)")
	fs.BoolVar(&o.skipVerify, "cassandra-tls-skip-verify", false, "do not verify the nodes' certificates (testing only)")
}

// addCassandraReadFlags registers the flags of commands that scan a table: --rate, and --shard
// when shards makes sense (migrate).
func (inv *invocation) addCassandraReadFlags(fs *pflag.FlagSet, shards bool) {
	o := &inv.cassandra
	fs.Float64Var(&o.rate, "rate", 0, "read at most this many rows per second from Cassandra, over all workers (0: no limit)")
	if shards {
		// no backquotes in a usage string: pflag would take the quoted text as the value's name
		fs.StringVar(&o.shard, "shard", "", "read shard i of N of the source (i/N, e.g. 0/3): Cassandra token ranges, files (each file read whole by one shard, balanced by size) or gen: rows; refused for kafka:. Run N of them, each with its own --out, then combine them with rekey merge")
	}
}

// checkCassandraFlags refuses the Cassandra-only flags for a source that is not a Cassandra
// table, which would otherwise ignore them: --shard (every shard of a file would read all of it,
// and merge would combine full copies), --rate, the credentials and the TLS options.
func (inv *invocation) checkCassandraFlags(source string) error {
	if isCassandraURI(source) {
		return nil
	}
	o := inv.cassandra
	if o.shard != "" && isKafkaURI(source) {
		return fmt.Errorf("--shard %s: a Kafka topic is not read in shards: its window is read by one run (replicate scales by consumer group instead); drop --shard", o.shard)
	}
	set := map[string]bool{"--rate": o.rate != 0, "--cassandra-user": o.user != "", "--cassandra-password-file": o.passwordFile != "",
		"--cassandra-tls": o.tls, "--cassandra-ca": o.caFile != "", "--cassandra-cert": o.certFile != "", "--cassandra-key": o.keyFile != "",
		"--cassandra-server-name": o.serverName != "", "--cassandra-tls-skip-verify": o.skipVerify}
	var given []string
	for name, ok := range set {
		if ok {
			given = append(given, name)
		}
	}
	if len(given) == 0 {
		return nil
	}
	sort.Strings(given)
	what := "no --source"
	if source != "" {
		what = "the source " + sourceuri.Redact(source)
	}
	return fmt.Errorf("%s: Cassandra sources only (cassandra://...), and %s is not one: leave %s out", strings.Join(given, ", "), what, map[bool]string{true: "them", false: "it"}[len(given) > 1])
}

func isCassandraURI(uri string) bool { return strings.HasPrefix(uri, "cassandra://") }

// cassandraConfig builds a source configuration from a URI, the flags and the environment.
func (inv *invocation) cassandraConfig(uri string, m *transform.Mapping, workers int) (cassandra.Config, error) {
	cfg, err := cassandra.ParseURI(uri)
	if err != nil {
		return cfg, err
	}
	if cfg.Keyspace == "" && m != nil && m.Source.Name != "" {
		ks, t, ok := strings.Cut(m.Source.Name, ".")
		if !ok {
			return cfg, fmt.Errorf("--source %q names no keyspace/table and the mapping's source.name %q is not keyspace.table", sourceuri.Redact(uri), m.Source.Name)
		}
		cfg.Keyspace, cfg.Table = ks, t
	}
	o := inv.cassandra
	switch {
	case o.user != "":
		cfg.Username = o.user
	case cfg.Username == "":
		cfg.Username = inv.getenv(cassandra.UserEnv)
	}
	cfg.Password = inv.getenv(cassandra.PasswordEnv)
	if o.passwordFile != "" {
		data, err := os.ReadFile(o.passwordFile)
		if err != nil {
			return cfg, fmt.Errorf("--cassandra-password-file: %w", err)
		}
		cfg.Password = strings.TrimRight(string(data), "\r\n")
	}
	t := &cfg.TLS
	t.Enabled = t.Enabled || o.tls
	t.CAFile, t.CertFile, t.KeyFile, t.ServerName, t.SkipVerify = o.caFile, o.certFile, o.keyFile, o.serverName, o.skipVerify
	if o.rate > 0 {
		cfg.Rate = o.rate
	}
	if o.shard != "" {
		if cfg.Shard, err = cassandra.ParseShard(o.shard); err != nil {
			return cfg, fmt.Errorf("--shard: %w", err)
		}
	}
	if cfg.Workers == 0 && workers > 0 {
		cfg.Workers = workers // --workers: ranges read at once
	}
	cfg.RowWriteTimes = o.rowWriteTimes
	return cfg, nil
}

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
	cfg, err := inv.cassandraConfig(uri, m, workers)
	if err != nil {
		return nil, usageError(err)
	}
	if cfg.Shard.Count > 1 && regions == 0 && m.Regions != nil && m.Regions.Size > 0 {
		return nil, usageError(fmt.Errorf("--shard: %s sizes its regions from the table's size estimate (regions.size), which each shard may see differently; every shard must use the same region plan: pass --regions N, or use regions.count or regions.split_keys", path))
	}
	src, err := cassandra.New(cfg, logger.Named("source.cassandra"))
	if err != nil {
		return nil, usageError(err)
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

// openCassandra hands out the source loadProgramFor connected, or connects anew and reads the
// columns of schema (a mapping compiled from its own source.columns), in that order.
func (inv *invocation) openCassandra(uri string, schema pipeline.SourceSchema, logger *zap.Logger) (pipeline.Source, error) {
	src := inv.openedCassandra[uri]
	delete(inv.openedCassandra, uri)
	if src == nil { // read the columns the mapping lists, in its order
		cfg, err := inv.cassandraConfig(uri, nil, 0)
		if err != nil {
			return nil, err
		}
		cfg.Columns = schema
		if src, err = cassandra.New(cfg, logger.Named("source.cassandra")); err != nil {
			return nil, err
		}
	}
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

package cassandra

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source"
	"github.com/rekey/rekey/source/sourceuri"
)

// URIPrefix starts every Cassandra --source URI.
const URIPrefix = "cassandra://"

// Kind is the Cassandra source for the command line: a table, read by a token-range scan, with
// the connection's credentials and TLS files as flags.
var Kind = source.Kind{
	Prefix:   URIPrefix,
	CatchUp:  true,
	Help:     help,
	NewFlags: func() source.Flags { return &Flags{} },
	Open: func(ctx context.Context, uri string, in source.Input) (pipeline.Source, error) {
		// the columns the mapping lists, in its order
		cfg, err := CommandConfig(uri, "", in)
		if err != nil {
			return nil, err
		}
		cfg.Columns = in.Schema
		return New(ctx, cfg, in.Logger.Named("source.cassandra"))
	},
	// the table's columns and types, which the mapping is compiled against
	OpenSchema: func(ctx context.Context, uri, table string, in source.Input) (source.SchemaSource, error) {
		cfg, err := CommandConfig(uri, table, in)
		if err != nil {
			return nil, err
		}
		src, err := New(ctx, cfg, in.Logger.Named("source.cassandra"))
		if err != nil {
			return nil, err
		}
		return src, nil
	},
}

var _ source.SchemaSource = (*Source)(nil)

const help = `  cassandra://host1,host2:9042/keyspace/table?consistency=LOCAL_ONE&dc=dc1&page_size=5000&splits=N
                     a Cassandra table, read by a parallel token-range scan; the columns and their
                     types come from the table's schema (source.columns is optional and, when
                     given, checked). More parameters: workers, rate, writetime=c1,c2, ttl=c1,
                     shard=i/N, retries, timeout, tls=true. Credentials: --cassandra-user (or
                     REKEY_CASSANDRA_USER) and REKEY_CASSANDRA_PASSWORD or --cassandra-password-file.
                     since=2026-11-25T10:00:00Z (or epoch ms or us): a catch-up, only rows with a
                     cell written since then (by WRITETIME); CQL cannot filter on it, so every row
                     is still read and the older ones are counted as skipped. Rows without any
                     regular cell, and rows holding a non-frozen collection or UDT (which has no
                     WRITETIME), are kept; deletes are not caught up. migrate prints the since=
                     of the next catch-up`

// pageMemoryShare: the page of each range read at once may hold 1/pageMemoryShare of --memory
// over those ranges (Config.PageBytes), as a page of page_size rows of large cells would not fit.
const pageMemoryShare = 8

// Flags are the options of a Cassandra source that do not belong in the URI: credentials and
// TLS files, plus --rate.
type Flags struct {
	user         string
	passwordFile string
	tls          bool
	caFile       string
	certFile     string
	keyFile      string
	serverName   string
	skipVerify   bool
	rate         float64
}

// Add registers the connection flags (credentials, TLS), and --rate for a command that scans a
// table.
func (o *Flags) Add(fs *pflag.FlagSet, use source.Use) {
	fs.StringVar(&o.user, "cassandra-user", "", "Cassandra user name (default $"+UserEnv+"); the password comes from $"+PasswordEnv+" or --cassandra-password-file, never from the command line")
	fs.StringVar(&o.passwordFile, "cassandra-password-file", "", "file holding the Cassandra password (a mounted Kubernetes secret, for example)")
	fs.BoolVar(&o.tls, "cassandra-tls", false, "connect to Cassandra with TLS (implied by the other TLS options)")
	fs.StringVar(&o.caFile, "cassandra-ca", "", "PEM file of the CAs that sign the Cassandra nodes' certificates (default: the system's)")
	fs.StringVar(&o.certFile, "cassandra-cert", "", "client certificate (PEM) for mutual TLS, with --cassandra-key")
	fs.StringVar(&o.keyFile, "cassandra-key", "", "client private key (PEM) for mutual TLS")
	fs.StringVar(&o.serverName, "cassandra-server-name", "", "name to verify in the nodes' certificates (default: the address dialled)")
	fs.BoolVar(&o.skipVerify, "cassandra-tls-skip-verify", false, "do not verify the nodes' certificates (testing only)")
	if use.Scan {
		fs.Float64Var(&o.rate, "rate", 0, "read at most this many rows per second from Cassandra, over all workers (0: no limit)")
	}
}

// Refuse refuses the Cassandra-only flags for a source that is not a Cassandra table, which
// would otherwise ignore them: --rate, the credentials and the TLS options.
func (o *Flags) Refuse(uri string) error {
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
	if uri != "" {
		what = "the source " + sourceuri.Redact(uri)
	}
	return fmt.Errorf("%s: Cassandra sources only (cassandra://...), and %s is not one: leave %s out", strings.Join(given, ", "), what, map[bool]string{true: "them", false: "it"}[len(given) > 1])
}

// CommandConfig is the configuration of a cassandra:// URI with the command line's flags
// (in.Flags) and environment. table ("keyspace.table", the mapping's source.name) names the
// table when the URI does not.
func CommandConfig(uri, table string, in source.Input) (Config, error) {
	cfg, err := ParseURI(uri)
	if err != nil {
		return cfg, err
	}
	if cfg.Keyspace == "" && table != "" {
		ks, t, ok := strings.Cut(table, ".")
		if !ok {
			return cfg, fmt.Errorf("--source %q names no keyspace/table and the mapping's source.name %q is not keyspace.table", sourceuri.Redact(uri), table)
		}
		cfg.Keyspace, cfg.Table = ks, t
	}
	o, _ := in.Flags.(*Flags)
	if o == nil {
		o = &Flags{}
	}
	switch {
	case o.user != "" && cfg.Username != "" && cfg.Username != o.user:
		// one login: which of the two the password is for is a guess
		return cfg, fmt.Errorf("--cassandra-user %s and the --source URI's user %s@ disagree: give the user once", o.user, cfg.Username)
	case o.user != "":
		cfg.Username = o.user
	case cfg.Username == "":
		cfg.Username = in.Getenv(UserEnv)
	}
	cfg.Password = in.Getenv(PasswordEnv)
	if o.passwordFile != "" {
		data, err := os.ReadFile(o.passwordFile)
		if err != nil {
			return cfg, fmt.Errorf("--cassandra-password-file: %w", err)
		}
		pw := strings.TrimRight(string(data), "\r\n")
		if cfg.Password != "" && cfg.Password != pw {
			// one login: which of the two is meant is a guess
			return cfg, fmt.Errorf("--cassandra-password-file %s and %s hold two different passwords: give the password once (unset %s, or leave out the flag)", o.passwordFile, PasswordEnv, PasswordEnv)
		}
		cfg.Password = pw
	}
	t := &cfg.TLS
	t.Enabled = t.Enabled || o.tls
	t.CAFile, t.CertFile, t.KeyFile, t.ServerName, t.SkipVerify = o.caFile, o.certFile, o.keyFile, o.serverName, o.skipVerify
	if o.rate > 0 {
		if cfg.Rate > 0 && cfg.Rate != o.rate {
			return cfg, fmt.Errorf("--rate %s and the --source URI's rate=%s disagree: give the rate once",
				strconv.FormatFloat(o.rate, 'g', -1, 64), strconv.FormatFloat(cfg.Rate, 'g', -1, 64))
		}
		cfg.Rate = o.rate
	}
	if uriShard := cfg.Shard; in.ShardFlag && !uriShard.Whole() && uriShard != in.Shard {
		// a command that takes --shard (migrate) writes a shard's output, whose next step is
		// rekey merge, for --shard only: read as the whole table's, a shard of the URI's would
		// be loaded as the whole table, and --shard would replace another one without a word
		if in.Shard.Whole() {
			return cfg, fmt.Errorf("--source %s reads shard %s of the table (shard=): give --shard %s instead, which makes the output a shard's to merge with the others", sourceuri.Redact(uri), uriShard, uriShard)
		}
		return cfg, fmt.Errorf("--source %s reads shard %s of the table (shard=) and --shard says %s: give the shard once, with --shard", sourceuri.Redact(uri), uriShard, in.Shard)
	}
	if in.Shard != (Shard{}) { // --shard, over the URI's shard=
		cfg.Shard = in.Shard
	}
	if cfg.Workers == 0 && in.Workers > 0 {
		cfg.Workers = in.Workers // --workers: ranges read at once
	}
	if in.Memory > 0 && cfg.PageBytes == 0 {
		// each range read at once holds about four pages (the one fetched ahead, the one
		// decoded, those queued for the workers): about half the budget for the source's pages
		workers := cfg.Workers
		if workers <= 0 {
			workers = defaultWorkers()
		}
		cfg.PageBytes = max(1, in.Memory/pageMemoryShare/int64(workers))
	}
	cfg.RowWriteTimes = in.WriteTimes
	cfg.CellWriteTimes = in.CellWriteTimes
	return cfg, nil
}

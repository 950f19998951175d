package cassandra

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/sourceuri"
)

// Config configures a Cassandra source. ParseURI fills it from a --source URI; credentials and
// TLS files come from flags or the environment, never from the URI.
type Config struct {
	// Hosts are contact points, "host" or "host:port". The rest of the cluster is discovered.
	Hosts []string
	// Port is used for hosts given without one. Default 9042.
	Port int
	// Keyspace and Table name the table to read.
	Keyspace, Table string
	// Consistency of the scan queries: ONE, LOCAL_ONE (default), QUORUM, LOCAL_QUORUM, ALL...;
	// not ANY, which Cassandra takes for writes only.
	Consistency string
	// DC, when set, keeps the queries in that data center's nodes (DC-aware round robin): when
	// none of them answers, a page fails and is retried, never read from another data center.
	DC string
	// PageSize is the number of rows per page; each page is one batch. Default 5000.
	PageSize int
	// Splits is the number of token sub-ranges the ring is cut into. Default 8 × cores × nodes
	// (64 × nodes with Shard, so that every machine computes the same list), and never fewer
	// than the ring's own ranges. A resumed run must use the same value as the first run.
	Splits int
	// Workers is the number of ranges read at the same time. Default GOMAXPROCS.
	Workers int
	// PageBytes, when set, bounds the values a page holds: a range whose rows are large is read
	// in pages of fewer rows than PageSize (at least one), so that the pages read at once fit
	// the command's memory budget. 0: PageSize alone.
	PageBytes int64
	// Rate limits the rows read per second over all workers; 0 means no limit.
	Rate float64
	// WriteTime and TTL list regular columns whose writetime(col) / ttl(col) are read too,
	// offered to the mapping as writetime_<col> (timestamp, epoch ms: Cassandra's microseconds
	// divided by 1000) and ttl_<col> (int, seconds left; null without a TTL).
	WriteTime, TTL []string
	// Since, when set, makes a catch-up read: only rows with a regular cell written at or after
	// it (the newest WRITETIME of the row's regular columns) become records. CQL cannot filter
	// on WRITETIME, so every row is still read and the older ones are counted as skipped
	// (Batch.Skipped). Rows whose regular columns are all null (or only non-frozen
	// collections) have no WRITETIME and are kept: they cannot be dated.
	Since time.Time
	// RowWriteTimes makes every batch carry each row's write time (Batch.WriteTimes): the
	// earliest WRITETIME of the row's regular columns, in epoch milliseconds, the row's creation
	// as well as Cassandra knows it (rekey report's write order). Rows without a set regular
	// cell (a key-only table) have none. It reads one writetime() per regular column.
	RowWriteTimes bool
	// CellWriteTimes makes every record carry the write time of each regular and static cell
	// it reads (Record.Times, epoch milliseconds: WRITETIME()'s microseconds floored, at least 1), for a
	// mapping that writes them as the target's cell timestamps. Non-frozen collections have
	// no single write time: their columns get none (the writer's time).
	CellWriteTimes bool
	// Columns, when set, are the columns to read, in this order: records then follow it instead
	// of the whole table (Source.Schema). Each must be a column of the table (or a writetime_ /
	// ttl_ column) with the same CQL type. Empty: every column of the table.
	Columns pipeline.SourceSchema
	// Shard reads a disjoint part of the ranges (Index of Count); the zero value reads all.
	Shard Shard
	// Retries is how often a failing page is retried (timeouts, unavailable, overloaded,
	// lost connections), with exponential backoff from RetryBackoff up to MaxBackoff, before
	// its range is given up. Default 8; -1 means no retry.
	Retries      int
	RetryBackoff time.Duration // default 200ms
	MaxBackoff   time.Duration // default 10s
	// Timeout bounds one request (a page); ConnectTimeout the connection set-up. Default 12s and 10s.
	Timeout, ConnectTimeout time.Duration
	// Username and Password for PasswordAuthenticator; the password is never logged.
	Username, Password string
	TLS                TLSConfig
	// ProtoVersion of the native protocol; default 4.
	ProtoVersion int
	// NumConns is the number of connections per host; default 2.
	NumConns int
	// SampleRanges is how many ranges, spread over the ring, Sample reads from. Default 64.
	SampleRanges int
}

// TLSConfig enables TLS to the cluster. Server certificates are verified unless SkipVerify.
type TLSConfig struct {
	Enabled    bool
	CAFile     string // PEM bundle of the CAs to trust; default: the system's
	CertFile   string // client certificate (PEM), with KeyFile, for mutual TLS
	KeyFile    string
	ServerName string // name to verify in the server certificate; default: the host dialled
	SkipVerify bool   // do not verify the server certificate (testing only)
}

// Defaults.
const (
	DefaultPort         = 9042
	DefaultPageSize     = 5000
	DefaultConsistency  = "LOCAL_ONE"
	DefaultRetries      = 8
	DefaultRetryBackoff = 200 * time.Millisecond
	DefaultMaxBackoff   = 10 * time.Second
	DefaultTimeout      = 12 * time.Second
	DefaultSampleRanges = 64
)

// PasswordEnv and UserEnv are the environment variables read for credentials.
const (
	PasswordEnv = "REKEY_CASSANDRA_PASSWORD"
	UserEnv     = "REKEY_CASSANDRA_USER"
)

// Validate checks the configuration and fills in defaults.
func (c *Config) Validate() error {
	c.setDefaults()
	var errs []error
	if len(c.Hosts) == 0 {
		errs = append(errs, errors.New("no hosts"))
	}
	for _, h := range c.Hosts {
		if strings.TrimSpace(h) == "" {
			errs = append(errs, errors.New("an empty host name"))
		}
	}
	if c.Keyspace == "" || c.Table == "" {
		errs = append(errs, errors.New("no keyspace/table: write cassandra://host:9042/keyspace/table"))
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d out of range", c.Port))
	}
	const readLevels = "LOCAL_ONE, ONE, TWO, THREE, LOCAL_QUORUM, QUORUM, EACH_QUORUM or ALL"
	if cons, err := gocql.ParseConsistencyWrapper(strings.ToUpper(c.Consistency)); err != nil {
		errs = append(errs, fmt.Errorf("consistency %q: want %s", c.Consistency, readLevels))
	} else if cons == gocql.Any {
		// Cassandra takes ANY for writes only: every page would fail once the scan started
		errs = append(errs, fmt.Errorf("consistency=ANY is for writes only (Cassandra refuses a read at ANY): want %s", readLevels))
	}
	if c.PageSize < 1 {
		errs = append(errs, fmt.Errorf("page_size %d must be positive", c.PageSize))
	}
	if c.Splits < 0 {
		errs = append(errs, fmt.Errorf("splits %d must not be negative", c.Splits))
	}
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("workers %d must not be negative", c.Workers))
	}
	if c.Rate < 0 {
		errs = append(errs, fmt.Errorf("rate %g must not be negative", c.Rate))
	}
	if c.Shard.Count < 1 || c.Shard.Index < 0 || c.Shard.Index >= c.Shard.Count {
		errs = append(errs, fmt.Errorf("shard %d/%d: want i/N with 0 <= i < N", c.Shard.Index, c.Shard.Count))
	}
	if c.ProtoVersion < 3 || c.ProtoVersion > 5 {
		errs = append(errs, fmt.Errorf("protocol version %d: want 3, 4 or 5", c.ProtoVersion))
	}
	if c.Password != "" && c.Username == "" {
		errs = append(errs, errors.New("a password without a user name: set --cassandra-user or "+UserEnv))
	}
	if t := c.TLS; (t.CertFile == "") != (t.KeyFile == "") {
		errs = append(errs, errors.New("TLS: a client certificate needs both the certificate and the key file"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("cassandra source: %w", errors.Join(errs...))
	}
	return nil
}

// setDefaults fills in what the configuration leaves unset (zero), and turns TLS on when a TLS
// option is given.
func (c *Config) setDefaults() {
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Consistency == "" {
		c.Consistency = DefaultConsistency
	}
	if c.PageSize == 0 {
		c.PageSize = DefaultPageSize
	}
	if c.Shard.Count == 0 {
		c.Shard = Shard{Index: 0, Count: 1}
	}
	if c.Retries == 0 {
		c.Retries = DefaultRetries
	}
	if c.Retries < 0 {
		c.Retries = 0
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.ProtoVersion == 0 {
		c.ProtoVersion = 4
	}
	if c.NumConns <= 0 {
		c.NumConns = 2
	}
	if c.SampleRanges <= 0 {
		c.SampleRanges = DefaultSampleRanges
	}
	if t := c.TLS; !t.Enabled && (t.CAFile != "" || t.CertFile != "" || t.ServerName != "" || t.SkipVerify) {
		c.TLS.Enabled = true // giving a TLS option turns TLS on
	}
}

// ParseURI reads a --source URI:
//
//	cassandra://host1,host2:9042/keyspace/table?consistency=LOCAL_ONE&dc=dc1&page_size=5000&splits=N
//
// Further parameters: workers, rate (rows/s), writetime=col1,col2, ttl=col1, shard=i/N, retries,
// timeout (a Go duration), tls=true, proto, since (ParseSince). Parameter names are matched without case. A user
// name may be given as user@host; a password in the URI (user:password@host, or a parameter
// named password, PASSWORD, pwd...) is refused, as it would show in process lists and logs: use
// REKEY_CASSANDRA_PASSWORD. Errors quote the URI with its secrets masked (sourceuri.Redact).
func ParseURI(uri string) (Config, error) {
	if !strings.HasPrefix(uri, "cassandra://") {
		return Config{}, fmt.Errorf("source %q: want cassandra://host1,host2:9042/keyspace/table", sourceuri.Redact(uri))
	}
	u, err := sourceuri.Parse(uri, "cassandra", PasswordEnv+" (or use --cassandra-password-file)")
	if err != nil {
		return Config{}, fmt.Errorf("cassandra source %q: %w", sourceuri.Redact(uri), err)
	}
	uri = sourceuri.Redact(uri) // the errors below quote it (Parse refused any secret: belt and braces)
	cfg := Config{Username: u.User}
	var bare []int // hosts without a port get the port written on another host, else 9042
	for _, h := range u.Hosts {
		if host, port, err := net.SplitHostPort(h); err == nil {
			p, err := strconv.Atoi(port)
			if err != nil || p < 1 || p > 65535 {
				return Config{}, fmt.Errorf("cassandra source: host %q: bad port", h)
			}
			if cfg.Port == 0 {
				cfg.Port = p
			}
			cfg.Hosts = append(cfg.Hosts, net.JoinHostPort(host, port))
			continue
		}
		bare = append(bare, len(cfg.Hosts))
		cfg.Hosts = append(cfg.Hosts, strings.Trim(h, "[]"))
	}
	if len(cfg.Hosts) == 0 {
		return Config{}, fmt.Errorf("source %q: no hosts: want cassandra://host1,host2:9042/keyspace/table", uri)
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	for _, i := range bare {
		cfg.Hosts[i] = net.JoinHostPort(cfg.Hosts[i], strconv.Itoa(cfg.Port))
	}
	path := strings.Trim(u.Path, "/")
	if path != "" {
		ks, tbl, ok := strings.Cut(path, "/")
		if !ok {
			ks, tbl, ok = strings.Cut(path, ".")
		}
		if !ok || ks == "" || tbl == "" || strings.Contains(tbl, "/") {
			return Config{}, fmt.Errorf("source %q: want cassandra://hosts/keyspace/table", uri)
		}
		var err1, err2 error
		cfg.Keyspace, err1 = url.PathUnescape(ks)
		cfg.Table, err2 = url.PathUnescape(tbl)
		if err1 != nil || err2 != nil {
			return Config{}, fmt.Errorf("source %q: bad keyspace or table name", uri)
		}
	}
	for k, vs := range u.Query {
		if len(vs) != 1 { // which one was meant is a guess (names are matched without case)
			return Config{}, fmt.Errorf("source %q: parameter %q is given %d times: give it once", uri, k, len(vs))
		}
		v := vs[0]
		bad := func(want string) error {
			return fmt.Errorf("source %q: %s=%q: want %s", uri, k, v, want)
		}
		if strings.TrimSpace(v) == "" {
			// taken as unset, dc= would read from every data center without a word
			return Config{}, fmt.Errorf("source %q: %s= has no value: give one, or leave the parameter out for its default", uri, k)
		}
		switch k {
		case "consistency":
			cfg.Consistency = strings.ToUpper(v)
		case "dc":
			cfg.DC = v
		case "page_size", "pagesize":
			if cfg.PageSize, err = strconv.Atoi(v); err != nil || cfg.PageSize < 1 {
				return Config{}, bad("a positive number of rows")
			}
		case "splits":
			if cfg.Splits, err = strconv.Atoi(v); err != nil || cfg.Splits < 1 {
				return Config{}, bad("a positive number of token ranges")
			}
		case "workers", "concurrency":
			if cfg.Workers, err = strconv.Atoi(v); err != nil || cfg.Workers < 1 {
				return Config{}, bad("a positive number of ranges read at once")
			}
		case "rate":
			if cfg.Rate, err = strconv.ParseFloat(v, 64); err != nil || cfg.Rate < 0 {
				return Config{}, bad("rows per second")
			}
		case "writetime":
			cfg.WriteTime = splitList(v)
		case "ttl":
			cfg.TTL = splitList(v)
		case "since":
			if cfg.Since, err = ParseSince(v); err == nil {
				err = checkSince(cfg.Since, time.Now())
			}
			if err != nil {
				return Config{}, fmt.Errorf("source %q: %w", uri, err)
			}
		case "shard":
			if cfg.Shard, err = pipeline.ParseShard(v); err != nil {
				return Config{}, fmt.Errorf("source %q: %w", uri, err)
			}
		case "retries":
			if cfg.Retries, err = strconv.Atoi(v); err != nil || cfg.Retries < 0 {
				return Config{}, bad("a number of retries")
			}
			if cfg.Retries == 0 {
				cfg.Retries = -1
			}
		case "timeout":
			if cfg.Timeout, err = time.ParseDuration(v); err != nil || cfg.Timeout <= 0 {
				return Config{}, bad("a duration like 30s")
			}
		case "tls", "ssl":
			if cfg.TLS.Enabled, err = strconv.ParseBool(v); err != nil {
				return Config{}, bad("true or false")
			}
		case "proto", "protocol":
			if cfg.ProtoVersion, err = strconv.Atoi(v); err != nil {
				return Config{}, bad("3, 4 or 5")
			}
		default:
			return Config{}, fmt.Errorf("source %q: unknown parameter %q (want consistency, dc, page_size, splits, workers, rate, writetime, ttl, since, shard, retries, timeout, tls, proto)", uri, k)
		}
	}
	return cfg, nil
}

// ParseSince reads a since= value: an RFC 3339 time (2026-11-25T10:00:00Z), or epoch
// milliseconds, or epoch microseconds (Cassandra's WRITETIME unit) for numbers of 10^14 and more.
// A number below 10^11 is refused: as milliseconds it is a time before March 1973, which no
// catch-up means, and it is most likely epoch seconds (the error says what it would be).
func ParseSince(v string) (time.Time, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		switch {
		case n <= 0:
		case n < 1e11:
			return time.Time{}, fmt.Errorf("since=%d: epoch seconds? since= takes epoch milliseconds or microseconds, and %d milliseconds is %s; "+
				"as seconds it is %s: give since=%d000 (milliseconds) or since=%s",
				n, n, time.UnixMilli(n).UTC().Format(time.RFC3339Nano), time.Unix(n, 0).UTC().Format(time.RFC3339), n, time.Unix(n, 0).UTC().Format(time.RFC3339))
		case n >= 1e14:
			return time.UnixMicro(n).UTC(), nil
		default:
			return time.UnixMilli(n).UTC(), nil
		}
	} else if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	} else if t, err := time.Parse(time.RFC3339Nano, strings.Replace(v, " ", "+", 1)); err == nil {
		// a URI's query reads the + of an offset as a space (since=...T11:00:00+01:00), which
		// no RFC 3339 time holds
		return t.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("since=%q: want an RFC 3339 time like 2026-11-25T10:00:00Z, or epoch milliseconds or microseconds", v)
}

// checkSince refuses a since= after now: every row would be skipped as older, and the run
// would end as if it had caught up.
func checkSince(since, now time.Time) error {
	if !since.After(now) {
		return nil
	}
	return fmt.Errorf("since=%s is in the future (the time here is %s): every row would be skipped; "+
		"a catch-up starts from the previous run's start (its summary, Next steps and next_since in manifest.json give it)",
		since.Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339))
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// tlsConfig builds the crypto/tls configuration, loading the files now so that a missing or
// bad file is reported before connecting.
func (t TLSConfig) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.SkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("TLS CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS CA file %s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Package sqlsink writes target rows into a table through the MySQL protocol: Lindorm's wide-table
// SQL endpoint (lindorm://, UPSERT INTO) and MySQL-protocol servers (mysql://, INSERT ... ON
// DUPLICATE KEY UPDATE), for migrate, replicate and verify.
//
// Each target is a Dialect (sqldialect) in a folder of its own (lindormsql, mysqlsql), listed by
// sink/sqltargets: the package builds statements and checks tables only through it (dialect.go,
// schema.go); which server error means what is the table in errors.go. Before anything is written, CheckTable compares the table's
// definition with the mapping's target schema and refuses a table that differs (schema.go).
package sqlsink

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rekey/rekey/sink/sqltargets"
	"github.com/rekey/rekey/source/sourceuri"
)

// URIHelp describes the SQL target URIs for --help: each target's entry, and the tables rekey
// ddl prints besides its default (sink/sqltargets).
func URIHelp() string {
	lines := []string{"SQL targets (--out of migrate and replicate, --target of verify):"}
	for _, d := range sqltargets.All() {
		lines = append(lines, d.URIHelp)
	}
	return strings.Join(append(lines, `  The table is the mapping's target table unless ?table= names another. tls=true|skip-verify|preferred
  as go-sql-driver/mysql offers (default: no TLS). A password in the URI is refused. The table must
  exist with the mapping's columns, types and primary key (rekey ddl --dialect `+strings.Join(sqltargets.DDLServers()[1:], "|")+` prints one).`), "\n")
}

// IsURI tells whether s names a SQL target (lindorm:// or mysql://).
func IsURI(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && sqltargets.Get(scheme) != nil
}

// Target is a parsed SQL target URI.
type Target struct {
	Dialect  *Dialect
	Addr     string // host:port
	User     string
	Database string
	Table    string // from ?table=, "" when the mapping's table is meant
	TLS      string // "", "true", "skip-verify", "preferred"
	// CellTimestamps (lindorm://...?write_time=true): every upsert and delete carries its
	// change's write time as the cells' timestamp (Lindorm's _l_ts_ hint), so a change older
	// than what a cell holds loses to it, as in Cassandra. replicate only.
	CellTimestamps bool
	Redacted       string // the URI as errors and logs may quote it
	password       string
}

// UseCellWriteTimes makes every write carry its cells' write times (a mapping's
// target.write_time), or says why the target cannot: its rows have no cell timestamps.
func (t *Target) UseCellWriteTimes() error {
	if !t.Dialect.CellTimes {
		return fmt.Errorf("--out %s: the mapping's target.write_time writes Lindorm cell timestamps; a %s row has none: drop target.write_time, or write to lindorm://", t.Redacted, t.Dialect.Name)
	}
	t.CellTimestamps = true
	return nil
}

// ParseURI parses a lindorm:// or mysql:// URI; the password comes from getenv (the dialect's
// variable) only. Its errors start with the URI: the caller names the flag that gave it.
func ParseURI(raw string, getenv func(string) string) (*Target, error) {
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok {
		forms := sqltargets.Schemes()
		for i := range forms {
			forms[i] += "USER@HOST:PORT/DATABASE"
		}
		return nil, fmt.Errorf("%q: want %s", sourceuri.Redact(raw), sqltargets.Join(forms, "or"))
	}
	d := sqltargets.Get(scheme)
	if d == nil {
		return nil, fmt.Errorf("%q: unknown SQL target %s:// (want %s)", sourceuri.Redact(raw), scheme, sqltargets.Join(sqltargets.Schemes(), "or"))
	}
	t := &Target{Dialect: d, Redacted: sourceuri.Redact(raw)}
	u, err := sourceuri.Parse(raw, scheme, d.PasswordEnv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Redacted, err)
	}
	if len(u.Hosts) != 1 {
		return nil, fmt.Errorf("%s: name one HOST:PORT (a load balancer's address for several front ends)", t.Redacted)
	}
	host := u.Hosts[0]
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, strconv.Itoa(d.DefaultPort))
	}
	t.Addr, t.User = host, u.User
	if t.User == "" {
		return nil, fmt.Errorf("%s: name the user: %s://USER@HOST:PORT/DATABASE", t.Redacted, scheme)
	}
	t.Database = strings.Trim(u.Path, "/")
	if t.Database == "" || strings.Contains(t.Database, "/") {
		return nil, fmt.Errorf("%s: name the database: %s://USER@HOST:PORT/DATABASE", t.Redacted, scheme)
	}
	for name, vals := range u.Query {
		v := vals[len(vals)-1]
		switch name {
		case "table":
			t.Table = v
		case "tls":
			switch v {
			case "true", "skip-verify", "preferred", "false":
				if v != "false" {
					t.TLS = v
				}
			default:
				return nil, fmt.Errorf("%s: tls=%q: want true, skip-verify, preferred or false", t.Redacted, v)
			}
		case "write_time":
			if !d.CellTimes {
				return nil, fmt.Errorf("%s: write_time applies to lindorm:// only: a Lindorm cell carries a timestamp a write can set (the _l_ts_ hint), a %s row has none; drop the parameter", t.Redacted, d.Title)
			}
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("%s: write_time=%q: want true or false", t.Redacted, v)
			}
			t.CellTimestamps = b
		default:
			return nil, fmt.Errorf("%s: unknown parameter %q (known: table, tls, write_time)", t.Redacted, name)
		}
	}
	t.password = getenv(d.PasswordEnv)
	return t, nil
}

// driverConfig is the go-sql-driver configuration: UTC everywhere (the session's time_zone is
// set on every connection, so that a TIMESTAMP or DATE literal means the same instant whatever
// the server's default zone: Lindorm's is UTC+8), the dialect's session settings (MySQL's: its
// sql_mode with backslash escapes; the driver runs a SET of each on every connection it opens), no server-side
// prepares (statements carry their literals: see dialect.go), timeouts so that a dead front end
// surfaces as an error.
func (t *Target) driverConfig() *mysql.Config {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName = t.User, t.password, "tcp", t.Addr, t.Database
	c.Loc = time.UTC
	c.Params = map[string]string{"time_zone": "'+00:00'"}
	for k, v := range t.Dialect.SessionParams {
		c.Params[k] = v
	}
	c.Timeout = 10 * time.Second
	c.ReadTimeout = 5 * time.Minute // a 2 MB batch on a loaded server may take a while
	c.WriteTimeout = time.Minute
	c.MaxAllowedPacket = 0 // ask the server
	c.TLSConfig = t.TLS    // the driver's own values: true verifies the server's name
	return c
}

// StateKey names a target for the local state folder: a hash of the address, database and table.
func (t *Target) StateKey(table string) string {
	h := sha256.Sum256([]byte(t.Dialect.Name + "\x00" + t.Addr + "\x00" + t.Database + "\x00" + table))
	return hex.EncodeToString(h[:8])
}

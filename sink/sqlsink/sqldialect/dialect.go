// Package sqldialect is what a SQL target is to sink/sqlsink: its URI scheme and password
// variable, the statement text that differs between servers, how it describes a table and which
// of its column types hold the mapping's, how a session is set up, and the CREATE TABLE `rekey
// ddl --dialect` prints. Each target is a Dialect value in a folder of its own
// (sink/sqlsink/lindormsql, sink/sqlsink/mysqlsql); sink/sqltargets lists them. sqlsink builds
// every statement and every check through a Dialect and never asks which one it has.
package sqldialect

import (
	"context"
	"database/sql"

	"github.com/rekey/rekey/pipeline"
)

// Dialect is one SQL target. The fields are data where the targets differ by a word or a
// switch, funcs where they differ by a procedure.
type Dialect struct {
	Name        string // the URI scheme: "lindorm", "mysql"
	Title       string // the server in messages: "Lindorm", "MySQL"
	PasswordEnv string // the variable that holds the password: never the URI
	DefaultPort int    // when the URI names a host without one
	// URIHelp is the target's entry in --help's SQL targets, indented as the list is.
	URIHelp string

	// CellTimes: a write may set its cells' timestamp (Lindorm's _l_ts_ hint), which carries a
	// change's or a cell's write time (Target.CellTimestamps); a MySQL row has none.
	CellTimes bool
	// BatchDeletes: a DELETE may name many keys ((k1,k2) IN (...)); otherwise one per key.
	BatchDeletes bool
	// DistinctUpsertKeys: one upsert statement must not name one key twice (Lindorm's UPSERT of
	// a batch says nothing of which row of a key wins): the last row of each key is sent (the one
	// before it when the server refuses it).
	DistinctUpsertKeys bool
	UpsertVerb         string // "UPSERT INTO ", "INSERT INTO "
	OnDuplicate        bool   // the upsert ends with ON DUPLICATE KEY UPDATE c=VALUES(c),..
	RowIn              bool   // (k1,k2) IN ((..),(..)) in SELECT; else (k1=.. AND k2=..) OR (..)
	FloatRead          string // appended to a FLOAT column in a SELECT list: reads its exact value
	// Quote renders an identifier: bare when plain, or always quoted.
	Quote func(name string) string

	// SessionParams are set on every connection besides time_zone (go-sql-driver's Params:
	// the driver runs a SET of each when it opens a connection).
	SessionParams map[string]string
	// CheckSession, when set, refuses a session whose settings the statements cannot rely on.
	CheckSession func(ctx context.Context, db *sql.DB) error
	// SessionID asks a session its id and its client as the server sees it (host:port: a server
	// numbers its sessions anew when it restarts); KillSession ends the session of the id in
	// place of its %d, and SessionAlive counts the sessions of that id (%d) and client (%s, a
	// quoted literal). A server runs
	// a statement whose connection was lost (cut, timed out, cancelled) to its end: its session
	// is ended, and waited for, before the statement is tried again, so that the first try cannot
	// land after the retry and the key's later changes. "": the target has none.
	SessionID, KillSession, SessionAlive string

	// Describe reads a table's definition; nil, nil when the table does not exist.
	Describe func(ctx context.Context, db *sql.DB, table string) (*TableDef, error)
	// TypeMismatch says why the table's column tc of def cannot hold the mapping's column c,
	// "" when it can, Mismatch when the types differ with nothing more to say.
	TypeMismatch func(c pipeline.Column, tc TableColumn, def *TableDef) string
	// KeyOrder: the table's primary key has a per-column order (DESC) that must be the
	// mapping's; otherwise the order is not compared (MySQL's primary key has none that matters).
	KeyOrder bool

	// DDL are the servers `rekey ddl --dialect` prints this target's CREATE TABLE for.
	DDL []DDL
	// DDLHint is the --dialect of rekey ddl that prints the table this server creates (" --dialect
	// mariadb"), "" when the default does; nil: "".
	DDLHint func(ctx context.Context, db *sql.DB) string
	// DDLHelp is the target's words in --dialect's usage ("lindorm"), DDLDoc its paragraph in
	// ddl's --help ("" for none).
	DDLHelp, DDLDoc string
}

// DDL is one server's CREATE TABLE, by the name `rekey ddl --dialect` takes.
type DDL struct {
	Name  string // --dialect's value: "lindorm", "mysql", "mariadb"
	Words string // in --dialect's list of values: "mysql (MySQL 8)"
	// Split: the table is pre-split by the region plan (--regions and --source shape it).
	Split bool
	// Create renders the text ddl prints: the CREATE TABLE of the schema, split by plan when
	// Split, with the mapping's target.options.
	Create func(schema pipeline.TargetSchema, plan pipeline.RegionPlan, options [][2]string) (string, error)
}

// Ident renders an identifier.
func (d *Dialect) Ident(name string) string { return d.Quote(name) }

// TableColumn is one column as the server describes it.
type TableColumn struct {
	Name      string
	Type      string // as the server writes it: "varchar(512)", "DECIMAL(20,4)", "datetime(3)"
	DataType  string // MySQL's DATA_TYPE ("varchar"), "" for Lindorm
	Precision int    // MySQL: NUMERIC_PRECISION or DATETIME_PRECISION
	Scale     int
	Collation string
	PadSpace  bool // the collation compares as if shorter strings were padded with spaces
	Unsigned  bool
	Desc      bool // Lindorm: SORT_ORDER DESC
	// MySQL: what the server puts in a column an INSERT leaves out, or an UPDATE does not set
	NotNull       bool   // IS_NULLABLE NO
	Default       string // COLUMN_DEFAULT as the server writes it, "" for none (NULL)
	OnUpdate      bool   // EXTRA says ON UPDATE: the server sets it when its row is updated, a key too
	AutoIncrement bool   // EXTRA says AUTO_INCREMENT: the server numbers a 0 or a null anew
	KeyPrefix     int    // the primary key holds only its first N characters or bytes (SUB_PART)
}

// TableDef is a table as the server describes it.
type TableDef struct {
	Columns []TableColumn
	Key     []string // primary-key columns in key order
	// Unique names the table's unique indexes besides the primary key (MySQL): an upsert
	// whose row repeats another key's indexed values would update that row instead
	Unique []string
	Table  string
	// NoPadBin is a binary NO PAD utf8mb4 collation the server offers ("" if none): what a key
	// text column should use.
	NoPadBin string
}

// Mismatch is TypeMismatch's answer for a type that differs with nothing more to say.
const Mismatch = "\x00"

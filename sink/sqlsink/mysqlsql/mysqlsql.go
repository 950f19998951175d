// Package mysqlsql is a MySQL-protocol server (MySQL 8, MariaDB) as a SQL target (mysql://):
// INSERT ... ON DUPLICATE KEY UPDATE, many keys per DELETE, every identifier back-quoted,
// FLOATs read as DOUBLEs, sessions that take backslash escapes, tables described by
// information_schema with the MySQL types that hold the mapping's, and the mysql:// twin of a
// Lindorm table that `rekey ddl --dialect mysql|mariadb` prints.
package mysqlsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sqlsink/sqldialect"
)

// PasswordEnv holds the password of a mysql:// target: never the URI.
const PasswordEnv = "REKEY_MYSQL_PASSWORD"

// Dialect is MySQL's and MariaDB's. Their text protocol prints a FLOAT column with 6
// significant digits (0.1 stored as 0.100000001490116 reads as "0.1", 1.2345678 as "1.23457"),
// so verify would read most stored FLOATs as other values; as a DOUBLE (`f` + 0e0, the float
// widened exactly) every digit is printed.
var Dialect = &sqldialect.Dialect{
	Name: "mysql", Title: "MySQL", PasswordEnv: PasswordEnv, DefaultPort: 3306,
	URIHelp: `  mysql://USER@HOST:PORT/DATABASE[?table=T&tls=true]      a MySQL-protocol server (MySQL, MariaDB):
                                      INSERT ... ON DUPLICATE KEY UPDATE; password from ` + PasswordEnv,
	BatchDeletes:  true,
	UpsertVerb:    "INSERT INTO ",
	OnDuplicate:   true,
	RowIn:         true,
	FloatRead:     " + 0e0",
	Quote:         quote,
	SessionParams: map[string]string{"sql_mode": sessionSQLMode},
	CheckSession:  checkBackslashEscapes,
	SessionID:     "SELECT ID, HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()",
	KillSession:   "KILL CONNECTION %d",
	SessionAlive:  "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %d AND HOST = %s",
	Describe:      describe,
	TypeMismatch:  typeMismatch,
	DDL: []sqldialect.DDL{
		{Name: "mysql", Words: "mysql (MySQL 8)", Create: ddlFor("mysql")},
		{Name: "mariadb", Words: "mariadb", Create: ddlFor("mariadb")},
	},
	DDLHint: ddlHint,
	DDLHelp: "mysql (MySQL 8) or mariadb for a MySQL-protocol server's CREATE TABLE",
	DDLDoc: `--dialect mysql (MySQL 8) or --dialect mariadb prints the table for a MySQL-protocol server
instead (the mysql:// twin of the Lindorm table, for tests and MySQL targets): the same columns and
primary key in MySQL types (TIMESTAMP as datetime(3), VARCHAR keys as varchar(N) in the server's
binary NO PAD collation, utf8mb4_0900_bin on MySQL 8, utf8mb4_nopad_bin on MariaDB, which compare
bytes as Lindorm does: utf8mb4_bin would make 'a' and 'a ' one key), without split keys.`,
}

// quote back-quotes every identifier.
func quote(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// sessionSQLMode is the server's sql_mode without NO_BACKSLASH_ESCAPES and EMPTY_STRING_IS_NULL,
// with STRICT_ALL_TABLES, set on every connection: the statements' string literals take
// backslash escapes (sqlsink's dialect.go), an empty string stays one (MariaDB's
// EMPTY_STRING_IS_NULL reads an empty literal as NULL), and a value the column cannot hold is refused, so that
// it goes to the rejects: without a strict mode the server stores it cut short (a key merging
// with another), or a date out of range as zeros, with a warning rekey does not read. A server
// whose mode changes (a restart with another configuration) must not change what the literals
// mean on the connections opened after it. The other modes stay the server's.
const sessionSQLMode = "TRIM(BOTH ',' FROM CONCAT(REPLACE(REPLACE(REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), " +
	"',NO_BACKSLASH_ESCAPES,', ','), ',EMPTY_STRING_IS_NULL,', ','), ',STRICT_ALL_TABLES,', ','), 'STRICT_ALL_TABLES'))"

// checkBackslashEscapes refuses a session with NO_BACKSLASH_ESCAPES or EMPTY_STRING_IS_NULL, or
// without a strict mode: every connection sets its sql_mode so (sessionSQLMode), and the
// statements' literals and the rejects rely on that.
func checkBackslashEscapes(ctx context.Context, db *sql.DB) error {
	var mode string
	if err := db.QueryRowContext(ctx, "SELECT @@SESSION.sql_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read sql_mode: %w", err)
	}
	modes := "," + strings.ToUpper(mode) + ","
	for _, m := range []string{"NO_BACKSLASH_ESCAPES", "EMPTY_STRING_IS_NULL"} {
		if strings.Contains(modes, ","+m+",") {
			return fmt.Errorf("the session's sql_mode %q still has %s after rekey set it without: rekey's string literals cannot rely on it; report this with the server's version", mode, m)
		}
	}
	if !strings.Contains(modes, ",STRICT_ALL_TABLES,") && !strings.Contains(modes, ",STRICT_TRANS_TABLES,") {
		return fmt.Errorf("the session's sql_mode %q is not strict after rekey set STRICT_ALL_TABLES: the server would store values too long or out of range cut short instead of refusing them; report this with the server's version", mode)
	}
	return nil
}

// ddlHint is the --dialect of rekey ddl that prints a table this server creates.
func ddlHint(ctx context.Context, db *sql.DB) string {
	var version string // only a hint: MySQL's when the server does not say
	if db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version) == nil && strings.Contains(version, "MariaDB") {
		return " --dialect mariadb"
	}
	return " --dialect mysql"
}

// ddlFor is the CREATE TABLE ddl prints for server (a KeyCollations name): no split keys, no
// options.
func ddlFor(server string) func(pipeline.TargetSchema, pipeline.RegionPlan, [][2]string) (string, error) {
	return func(schema pipeline.TargetSchema, _ pipeline.RegionPlan, _ [][2]string) (string, error) {
		return DDL(schema, KeyCollations[server]), nil
	}
}

func describe(ctx context.Context, db *sql.DB, table string) (*sqldialect.TableDef, error) {
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COALESCE(NUMERIC_PRECISION, DATETIME_PRECISION, 0),
		COALESCE(NUMERIC_SCALE, 0), COALESCE(COLLATION_NAME, ''), IS_NULLABLE, COLUMN_DEFAULT, EXTRA FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, table)
	if err != nil {
		return nil, fmt.Errorf("read the definition of table %s (information_schema.COLUMNS): %w", table, err)
	}
	def := &sqldialect.TableDef{Table: table}
	for rows.Next() {
		var c sqldialect.TableColumn
		var nullable, extra string
		var deflt sql.NullString
		if err := rows.Scan(&c.Name, &c.DataType, &c.Type, &c.Precision, &c.Scale, &c.Collation, &nullable, &deflt, &extra); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the definition of table %s: %w", table, err)
		}
		c.DataType = strings.ToLower(c.DataType)
		c.Type = strings.ToLower(c.Type)
		c.Unsigned = strings.Contains(c.Type, "unsigned")
		c.NotNull = strings.EqualFold(nullable, "NO")
		// MySQL says no default with NULL, MariaDB with the word (a text default is quoted)
		if deflt.Valid && !strings.EqualFold(deflt.String, "NULL") {
			c.Default = deflt.String
		}
		c.OnUpdate = strings.Contains(strings.ToLower(extra), "on update")
		c.AutoIncrement = strings.Contains(strings.ToLower(extra), "auto_increment")
		def.Columns = append(def.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the definition of table %s: %w", table, err)
	}
	rows.Close()
	if len(def.Columns) == 0 {
		return nil, nil
	}
	if err := readPadding(ctx, db, def); err != nil {
		return nil, fmt.Errorf("read the collations of table %s (information_schema.COLLATIONS): %w", table, err)
	}
	krows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME, COALESCE(SUB_PART, 0) FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX`, table)
	if err != nil {
		return nil, fmt.Errorf("read the primary key of table %s (information_schema.STATISTICS): %w", table, err)
	}
	defer krows.Close()
	for krows.Next() {
		var k string
		var prefix int
		if err := krows.Scan(&k, &prefix); err != nil {
			return nil, fmt.Errorf("read the primary key of table %s: %w", table, err)
		}
		def.Key = append(def.Key, k)
		for i := range def.Columns {
			if strings.EqualFold(def.Columns[i].Name, k) {
				def.Columns[i].KeyPrefix = prefix
			}
		}
	}
	if err := krows.Err(); err != nil {
		return nil, fmt.Errorf("read the primary key of table %s: %w", table, err)
	}
	urows, err := db.QueryContext(ctx, `SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME <> 'PRIMARY' AND NON_UNIQUE = 0 ORDER BY INDEX_NAME`, table)
	if err != nil {
		return nil, fmt.Errorf("read the unique indexes of table %s (information_schema.STATISTICS): %w", table, err)
	}
	defer urows.Close()
	for urows.Next() {
		var u string
		if err := urows.Scan(&u); err != nil {
			return nil, fmt.Errorf("read the unique indexes of table %s: %w", table, err)
		}
		def.Unique = append(def.Unique, u)
	}
	if err := urows.Err(); err != nil {
		return nil, fmt.Errorf("read the unique indexes of table %s: %w", table, err)
	}
	return def, nil
}

// KeyCollations are the binary NO PAD collations of key text columns, by the server `rekey
// ddl --dialect` names. The binary collations servers default to (utf8mb4_bin) are PAD SPACE on
// MariaDB and MySQL: 'a' and 'a ' compare equal there and would be one row, where Lindorm, like
// the bulk-load files, keeps them apart.
var KeyCollations = map[string]string{
	"mysql":   "utf8mb4_0900_bin",  // MySQL 8 (and go-mysql-server, which follows it)
	"mariadb": "utf8mb4_nopad_bin", // MariaDB 10.2 and later
}

// readPadding sets PadSpace of the table's text columns and NoPadBin.
func readPadding(ctx context.Context, db *sql.DB, def *sqldialect.TableDef) error {
	pad, err := collationPadding(ctx, db)
	if err != nil {
		return err
	}
	for _, name := range []string{KeyCollations["mysql"], KeyCollations["mariadb"]} {
		if p, ok := pad[name]; ok && !p {
			def.NoPadBin = name
			break
		}
	}
	for i, c := range def.Columns {
		def.Columns[i].PadSpace = pad[strings.ToLower(c.Collation)]
	}
	return nil
}

// collationPadding tells of every collation of the server whether it is PAD SPACE. MySQL 8 says
// so in PAD_ATTRIBUTE; MariaDB has no such column and names its NO PAD collations _nopad_.
func collationPadding(ctx context.Context, db *sql.DB) (map[string]bool, error) {
	named := false
	rows, err := db.QueryContext(ctx, "SELECT COLLATION_NAME, PAD_ATTRIBUTE FROM information_schema.COLLATIONS")
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1054 { // unknown column
		named = true
		rows, err = db.QueryContext(ctx, "SELECT COLLATION_NAME, '' FROM information_schema.COLLATIONS")
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	pad := map[string]bool{}
	for rows.Next() {
		var name, attr string
		if err := rows.Scan(&name, &attr); err != nil {
			return nil, err
		}
		name = strings.ToLower(name)
		if named {
			pad[name] = !strings.Contains(name, "_nopad_")
		} else {
			pad[name] = strings.EqualFold(attr, "PAD SPACE")
		}
	}
	pad["binary"] = false
	return pad, rows.Err()
}

// typeMismatch is a MySQL or MariaDB table's: the MySQL types that hold
// each of the mapping's, a key text column compared byte for byte.
func typeMismatch(c pipeline.Column, tc sqldialect.TableColumn, def *sqldialect.TableDef) string {
	if tc.Unsigned {
		return " (unsigned: negative values would be refused)"
	}
	if tc.AutoIncrement {
		null := "NULL DEFAULT NULL"
		if c.IsKey() {
			null = "NOT NULL"
		}
		return fmt.Sprintf(" (AUTO_INCREMENT: the server would write a row whose %s is 0 or null under the next number instead; ALTER TABLE %s MODIFY %s %s %s)",
			c.Name, quote(def.Table), quote(c.Name), tc.Type, null)
	}
	if c.IsKey() && tc.OnUpdate {
		// a TIMESTAMP made so by explicit_defaults_for_timestamp=OFF: a datetime never is
		return fmt.Sprintf(" (ON UPDATE: the server would move a row rekey upserts again to the key of the update's time; ALTER TABLE %s MODIFY %s %s NOT NULL)",
			quote(def.Table), quote(c.Name), strings.Replace(tc.Type, "timestamp", "datetime", 1))
	}
	if c.IsKey() && tc.KeyPrefix > 0 {
		keys := make([]string, len(def.Key))
		for i, k := range def.Key {
			keys[i] = quote(k)
		}
		return fmt.Sprintf(" (the primary key holds only its first %d characters: keys that share them would be one row; ALTER TABLE %s DROP PRIMARY KEY, ADD PRIMARY KEY (%s))",
			tc.KeyPrefix, quote(def.Table), strings.Join(keys, ", "))
	}
	dt := tc.DataType
	switch c.Type {
	case pipeline.TypeVarchar:
		if !oneOf(dt, "varchar", "char", "text", "tinytext", "mediumtext", "longtext") {
			return sqldialect.Mismatch
		}
		if c.IsKey() {
			return keyTextMismatch(c, tc, def)
		}
		if dt == "char" {
			return " (char drops trailing spaces: 'a ' would be read back as 'a'; want varchar(N) or longtext)"
		}
	case pipeline.TypeJSON:
		if !oneOf(dt, "json", "longtext", "mediumtext", "text") {
			return sqldialect.Mismatch
		}
	case pipeline.TypeVarbinary:
		if !oneOf(dt, "varbinary", "binary", "blob", "tinyblob", "mediumblob", "longblob") {
			return sqldialect.Mismatch
		}
		if c.IsKey() {
			return keyBinaryMismatch(c, tc, def)
		}
		if dt == "binary" {
			return " (binary pads every value with zero bytes to its length: X'61' would be read back as X'6100..'; want varbinary(N) or longblob)"
		}
	case pipeline.TypeBigint:
		if dt != "bigint" {
			return sqldialect.Mismatch
		}
	case pipeline.TypeInteger:
		if dt != "int" && dt != "integer" {
			return sqldialect.Mismatch
		}
	case pipeline.TypeSmallint:
		if dt != "smallint" {
			return sqldialect.Mismatch
		}
	case pipeline.TypeTinyint:
		if dt != "tinyint" || tc.Type == "tinyint(1)" {
			return sqldialect.Mismatch
		}
	case pipeline.TypeBoolean:
		if !(dt == "tinyint" && tc.Type == "tinyint(1)") && dt != "boolean" && dt != "bool" {
			return " (want boolean, i.e. tinyint(1))"
		}
	case pipeline.TypeFloat, pipeline.TypeDouble:
		if dt != strings.ToLower(c.Type.String()) {
			return sqldialect.Mismatch
		}
		if strings.Contains(tc.Type, "(") { // float(7,4), double(10,2): MySQL's digits
			return " (rounds every value to its digits without an error, 1.23456 to 1.23 in double(10,2); want " + dt + ")"
		}
	case pipeline.TypeDecimal:
		if dt != "decimal" || tc.Precision != c.Precision || tc.Scale != c.Scale {
			return sqldialect.Mismatch
		}
	case pipeline.TypeTimestamp:
		if dt != "datetime" && dt != "timestamp" {
			return sqldialect.Mismatch
		}
		if tc.Precision < 3 {
			return " (milliseconds would be lost: want datetime(3) or timestamp(3))"
		}
	case pipeline.TypeDate:
		if dt != "date" {
			return sqldialect.Mismatch
		}
	}
	if !c.IsKey() {
		return fillsNulls(c, tc, def)
	}
	return ""
}

// fillsNulls says why a value column would hold a value where the row has a null, "" when it
// would not: a copy leaves a null out of its upsert (sqlsink's Write), and the server fills a
// column left out with its default, or with the time when it is ON UPDATE; a NOT NULL column
// refuses the null a change writes.
func fillsNulls(c pipeline.Column, tc sqldialect.TableColumn, def *sqldialect.TableDef) string {
	var what []string
	if tc.NotNull {
		what = append(what, "NOT NULL")
	}
	if tc.Default != "" {
		what = append(what, "DEFAULT "+tc.Default)
	}
	if tc.OnUpdate {
		what = append(what, "ON UPDATE")
	}
	if len(what) == 0 {
		return ""
	}
	collate := ""
	if tc.Collation != "" {
		collate = " COLLATE " + tc.Collation
	}
	return fmt.Sprintf(" (%s: a row whose %s is null would hold another value or be refused, where the source has none; "+
		"ALTER TABLE %s MODIFY %s %s%s NULL DEFAULT NULL)", strings.Join(what, ", "), c.Name, quote(def.Table), quote(c.Name), tc.Type, collate)
}

// keyTextMismatch says why a MySQL text column cannot be a key column, "" when it can: it must
// keep every byte of a key and compare keys byte for byte.
func keyTextMismatch(c pipeline.Column, tc sqldialect.TableColumn, def *sqldialect.TableDef) string {
	var why string
	switch dt := tc.DataType; {
	case dt == "char":
		why = "char drops trailing spaces: keys that differ only by them would be one row"
	case dt != "varchar":
		why = dt + " is a key by a prefix only: keys that share it would be one row"
	case !binaryCollation(tc.Collation):
		why = "collation " + tc.Collation + " compares without case or accents: keys that differ only so would be one row"
	case tc.PadSpace:
		why = "collation " + tc.Collation + " is PAD SPACE: keys that differ only by trailing spaces ('a', 'a ') would be one row"
	}
	if why != "" {
		return " (" + why + "; " + keyColumnFix(c, tc, def) + ")"
	}
	return ""
}

// keyBinaryMismatch says why a MySQL binary column cannot be a key column, "" when it can: it
// must keep every byte of a key, as Lindorm does.
func keyBinaryMismatch(c pipeline.Column, tc sqldialect.TableColumn, def *sqldialect.TableDef) string {
	var why string
	switch dt := tc.DataType; {
	case dt == "binary":
		why = "binary pads every key with zero bytes to its length: keys that differ only by trailing zero bytes (X'61', X'6100') would be one row"
	case dt != "varbinary":
		why = dt + " is a key by a prefix only: keys that share it would be one row"
	}
	if why != "" {
		typ := "varbinary(N)" // a blob: N as long as the longest key
		if tc.DataType == "binary" {
			typ = "var" + tc.Type // COLUMN_TYPE: "binary(16)"
		}
		return fmt.Sprintf(" (%s; ALTER TABLE %s MODIFY %s %s NOT NULL)", why, quote(def.Table), quote(c.Name), typ)
	}
	return ""
}

func oneOf(s string, set ...string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

// keyColumnFix says how to make a key text column compare byte by byte.
func keyColumnFix(c pipeline.Column, tc sqldialect.TableColumn, def *sqldialect.TableDef) string {
	if def.NoPadBin == "" {
		return fmt.Sprintf("this server offers no binary NO PAD collation (%s, %s): use a MariaDB or MySQL 8 server", KeyCollations["mariadb"], KeyCollations["mysql"])
	}
	typ := tc.Type // COLUMN_TYPE: "varchar(512)", "char(10)"
	switch tc.DataType {
	case "varchar":
	case "char":
		typ = "var" + typ
	default:
		typ = "varchar(N)" // a text column: N as long as the longest key
	}
	return fmt.Sprintf("ALTER TABLE %s MODIFY %s %s CHARACTER SET utf8mb4 COLLATE %s NOT NULL", quote(def.Table), quote(c.Name), typ, def.NoPadBin)
}

func binaryCollation(c string) bool {
	c = strings.ToLower(c)
	return c == "" || c == "binary" || strings.HasSuffix(c, "_bin")
}

// DDL renders the CREATE TABLE of the target schema for a MySQL-protocol server (the
// mysql:// twin of a Lindorm table): the types CheckTable accepts, key text columns compared
// byte by byte as Lindorm does (keyCollation: the server's binary NO PAD collation, one of
// KeyCollations), and key lengths within InnoDB's 3,072-byte index limit.
func DDL(schema pipeline.TargetSchema, keyCollation string) string {
	// the variable-length key columns share what the fixed ones leave of the index limit
	avail, chars, bins := 3072, 0, 0
	for _, c := range schema.Key() {
		switch c.Type {
		case pipeline.TypeVarchar:
			chars++
		case pipeline.TypeVarbinary:
			bins++
		case pipeline.TypeDecimal:
			avail -= (c.Precision + 8) / 9 * 4
		case pipeline.TypeTimestamp:
			avail -= 7
		case pipeline.TypeDate:
			avail -= 3
		default:
			avail -= max(1, c.Type.FixedSize())
		}
	}
	keyLen := 2048 // Lindorm's key limit
	if chars+bins > 0 {
		keyLen = min(keyLen, avail/(4*chars+bins))
	}
	return lindorm.CreateTable(schema, lindorm.TableDialect{
		Ident:    quote,
		Type:     func(c pipeline.Column) string { return mysqlType(c, keyLen, keyCollation) },
		KeySpace: true,
	}, nil)
}

func mysqlType(c pipeline.Column, keyLen int, keyCollation string) string {
	switch c.Type {
	case pipeline.TypeVarchar:
		if c.IsKey() {
			return fmt.Sprintf("varchar(%d) CHARACTER SET utf8mb4 COLLATE %s", keyLen, keyCollation)
		}
		return "longtext CHARACTER SET utf8mb4"
	case pipeline.TypeJSON:
		return "json"
	case pipeline.TypeVarbinary:
		if c.IsKey() {
			return fmt.Sprintf("varbinary(%d)", keyLen)
		}
		return "longblob"
	case pipeline.TypeBigint:
		return "bigint"
	case pipeline.TypeInteger:
		return "int"
	case pipeline.TypeSmallint:
		return "smallint"
	case pipeline.TypeTinyint:
		return "tinyint"
	case pipeline.TypeBoolean:
		return "boolean"
	case pipeline.TypeFloat:
		return "float"
	case pipeline.TypeDouble:
		return "double"
	case pipeline.TypeDecimal:
		return fmt.Sprintf("decimal(%d,%d)", c.Precision, c.Scale)
	case pipeline.TypeTimestamp:
		return "datetime(3)"
	case pipeline.TypeDate:
		return "date"
	}
	return c.SQLType()
}

package sqlsink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
)

// ErrTableMismatch is wrapped by CheckTable's error when the table is missing or differs from
// the mapping's target schema: a usage error, nothing was written.
var ErrTableMismatch = errors.New("the target table does not match the mapping")

// tableColumn is one column as the server describes it.
type tableColumn struct {
	Name      string
	Type      string // as the server writes it: "varchar(512)", "DECIMAL(20,4)", "datetime(3)"
	DataType  string // MySQL's DATA_TYPE ("varchar"), "" for Lindorm
	Precision int    // MySQL: NUMERIC_PRECISION or DATETIME_PRECISION
	Scale     int
	Collation string
	PadSpace  bool // the collation compares as if shorter strings were padded with spaces
	Unsigned  bool
	Desc      bool // Lindorm: SORT_ORDER DESC
}

type tableDef struct {
	Columns []tableColumn
	Key     []string // primary-key columns in key order
	Table   string
	// NoPadBin is a binary NO PAD utf8mb4 collation the server offers ("" if none): what a key
	// text column should use.
	NoPadBin string
}

// CheckTable reads the table's definition and compares it with the target schema: the table
// must exist, have exactly the schema's columns with types that hold its values, and the same
// primary key (columns and order). The error names every difference and what to do.
func CheckTable(ctx context.Context, db *sql.DB, d *Dialect, database string, schema pipeline.TargetSchema) error {
	var def *tableDef
	var err error
	if d == Lindorm {
		def, err = describeLindorm(ctx, db, d, schema.Table)
	} else {
		def, err = describeMySQL(ctx, db, schema.Table)
	}
	if err != nil {
		return err
	}
	name := database + "." + schema.Table
	if def == nil {
		return fmt.Errorf("%w: table %s does not exist: create it first (rekey ddl -m MAPPING%s prints its CREATE TABLE)", ErrTableMismatch, name, ddlFlag(ctx, db, d))
	}
	if diffs := compareTable(d, schema, def); len(diffs) > 0 {
		return fmt.Errorf("%w: table %s differs from the mapping's target schema:\n  %s\nrekey writes only into a table of the mapping's columns, types and primary key: fix the table or the mapping (rekey ddl -m MAPPING%s prints the expected CREATE TABLE)",
			ErrTableMismatch, name, strings.Join(diffs, "\n  "), ddlFlag(ctx, db, d))
	}
	return nil
}

// ddlFlag is the --dialect of rekey ddl that prints a table this server creates.
func ddlFlag(ctx context.Context, db *sql.DB, d *Dialect) string {
	if d != MySQL {
		return ""
	}
	var version string // only a hint: MySQL's when the server does not say
	if db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version) == nil && strings.Contains(version, "MariaDB") {
		return " --dialect mariadb"
	}
	return " --dialect mysql"
}

func describeMySQL(ctx context.Context, db *sql.DB, table string) (*tableDef, error) {
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COALESCE(NUMERIC_PRECISION, DATETIME_PRECISION, 0),
		COALESCE(NUMERIC_SCALE, 0), COALESCE(COLLATION_NAME, '') FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, table)
	if err != nil {
		return nil, fmt.Errorf("read the definition of table %s (information_schema.COLUMNS): %w", table, err)
	}
	def := &tableDef{Table: table}
	for rows.Next() {
		var c tableColumn
		if err := rows.Scan(&c.Name, &c.DataType, &c.Type, &c.Precision, &c.Scale, &c.Collation); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the definition of table %s: %w", table, err)
		}
		c.DataType = strings.ToLower(c.DataType)
		c.Type = strings.ToLower(c.Type)
		c.Unsigned = strings.Contains(c.Type, "unsigned")
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
	krows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX`, table)
	if err != nil {
		return nil, fmt.Errorf("read the primary key of table %s (information_schema.STATISTICS): %w", table, err)
	}
	defer krows.Close()
	for krows.Next() {
		var k string
		if err := krows.Scan(&k); err != nil {
			return nil, fmt.Errorf("read the primary key of table %s: %w", table, err)
		}
		def.Key = append(def.Key, k)
	}
	if err := krows.Err(); err != nil {
		return nil, fmt.Errorf("read the primary key of table %s: %w", table, err)
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
func readPadding(ctx context.Context, db *sql.DB, def *tableDef) error {
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

// describeLindorm reads DESCRIBE t, whose LindormTable result has one row per column with
// TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, TYPE, IS_PRIMARY_KEY and SORT_ORDER (Lindorm's DESCRIBE
// reference). Columns are found by name, so more or fewer of them do no harm. UNCERTAIN: that
// the primary-key rows come in key order (the reference's example lists them so), and how a
// missing table is reported (any error whose text says the table is not found).
func describeLindorm(ctx context.Context, db *sql.DB, d *Dialect, table string) (*tableDef, error) {
	rows, err := db.QueryContext(ctx, "DESCRIBE "+d.Ident(table))
	if err != nil {
		msg := strings.ToLower(err.Error())
		if strings.Contains(msg, "not found") || strings.Contains(msg, "not exist") || strings.Contains(msg, "doesn't exist") || strings.Contains(msg, "unknown table") {
			return nil, nil
		}
		return nil, fmt.Errorf("read the definition of table %s (DESCRIBE): %w", table, err)
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	idx := map[string]int{}
	for i, n := range names {
		idx[strings.ToUpper(n)] = i
	}
	need := func(n string) (int, error) {
		if i, ok := idx[n]; ok {
			return i, nil
		}
		return 0, fmt.Errorf("DESCRIBE %s: no %s column in its result (%s): this Lindorm version describes tables differently; please report it", table, n, strings.Join(names, ", "))
	}
	iName, err := need("COLUMN_NAME")
	if err != nil {
		return nil, err
	}
	iType, err := need("TYPE")
	if err != nil {
		return nil, err
	}
	iPK, err := need("IS_PRIMARY_KEY")
	if err != nil {
		return nil, err
	}
	iSort, hasSort := idx["SORT_ORDER"]
	def := &tableDef{}
	vals := make([]sql.NullString, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("DESCRIBE %s: %w", table, err)
		}
		c := tableColumn{Name: vals[iName].String, Type: strings.ToUpper(strings.TrimSpace(vals[iType].String))}
		if hasSort && strings.EqualFold(vals[iSort].String, "DESC") {
			c.Desc = true
		}
		if pk := strings.ToLower(vals[iPK].String); pk == "true" || pk == "1" || pk == "yes" {
			def.Key = append(def.Key, c.Name)
		}
		def.Columns = append(def.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("DESCRIBE %s: %w", table, err)
	}
	if len(def.Columns) == 0 {
		return nil, nil
	}
	return def, nil
}

// compareTable lists the differences between the table and the schema.
func compareTable(d *Dialect, schema pipeline.TargetSchema, def *tableDef) []string {
	var diffs []string
	have := map[string]tableColumn{}
	for _, c := range def.Columns {
		have[strings.ToLower(c.Name)] = c
	}
	want := map[string]bool{}
	for _, c := range schema.Columns {
		want[strings.ToLower(c.Name)] = true
		tc, ok := have[strings.ToLower(c.Name)]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("column %s (%s) is missing from the table", c.Name, c.SQLType()))
			continue
		}
		if why := typeMismatch(d, c, tc, def); why != "" {
			diffs = append(diffs, fmt.Sprintf("column %s: %s in the mapping, %s in the table%s", c.Name, c.SQLType(), tc.Type, strings.TrimRight(why, "\x00")))
		}
	}
	for _, c := range def.Columns {
		if !want[strings.ToLower(c.Name)] {
			diffs = append(diffs, fmt.Sprintf("column %s (%s) of the table is not in the mapping", c.Name, c.Type))
		}
	}
	keys := make([]string, schema.KeyLen)
	for i, c := range schema.Key() {
		keys[i] = c.Name
		if c.Desc {
			keys[i] += " DESC"
		}
	}
	tkeys := make([]string, len(def.Key))
	for i, k := range def.Key {
		tkeys[i] = k
		if d == Lindorm && have[strings.ToLower(k)].Desc {
			tkeys[i] += " DESC"
		}
	}
	if d == MySQL { // MySQL's primary key has no per-column order that matters here
		for i, c := range schema.Key() {
			keys[i] = c.Name
		}
	}
	if !strings.EqualFold(strings.Join(keys, ", "), strings.Join(tkeys, ", ")) {
		diffs = append(diffs, fmt.Sprintf("primary key: (%s) in the mapping, (%s) in the table", strings.Join(keys, ", "), strings.Join(tkeys, ", ")))
	}
	return diffs
}

// mismatch is typeMismatch's answer for a type that differs with nothing more to say.
const mismatch = "\x00"

// typeMismatch says why the table's column tc of def cannot hold the mapping's type, "" when it
// can.
func typeMismatch(d *Dialect, c pipeline.Column, tc tableColumn, def *tableDef) string {
	if d == Lindorm {
		return lindormTypeMismatch(c, tc)
	}
	return mysqlTypeMismatch(c, tc, def)
}

// lindormTypeMismatch is typeMismatch for a Lindorm table, whose types are the mapping's own.
func lindormTypeMismatch(c pipeline.Column, tc tableColumn) string {
	t, p, s, err := pipeline.ParseType(tc.Type)
	if err != nil {
		return " (a type rekey does not write)"
	}
	if t != c.Type {
		return mismatch
	}
	if t == pipeline.TypeDecimal && strings.Contains(tc.Type, "(") && (p != c.Precision || s != c.Scale) {
		return mismatch
	}
	return ""
}

// mysqlTypeMismatch is typeMismatch for a MySQL or MariaDB table: the MySQL types that hold
// each of the mapping's, a key text column compared byte for byte.
func mysqlTypeMismatch(c pipeline.Column, tc tableColumn, def *tableDef) string {
	if tc.Unsigned {
		return " (unsigned: negative values would be refused)"
	}
	dt := tc.DataType
	switch c.Type {
	case pipeline.TypeVarchar:
		if !oneOf(dt, "varchar", "char", "text", "tinytext", "mediumtext", "longtext") {
			return mismatch
		}
		if c.IsKey() {
			return keyTextMismatch(c, tc, def)
		}
	case pipeline.TypeJSON:
		if !oneOf(dt, "json", "longtext", "mediumtext", "text") {
			return mismatch
		}
	case pipeline.TypeVarbinary:
		if !oneOf(dt, "varbinary", "binary", "blob", "tinyblob", "mediumblob", "longblob") {
			return mismatch
		}
	case pipeline.TypeBigint:
		if dt != "bigint" {
			return mismatch
		}
	case pipeline.TypeInteger:
		if dt != "int" && dt != "integer" {
			return mismatch
		}
	case pipeline.TypeSmallint:
		if dt != "smallint" {
			return mismatch
		}
	case pipeline.TypeTinyint:
		if dt != "tinyint" || tc.Type == "tinyint(1)" {
			return mismatch
		}
	case pipeline.TypeBoolean:
		if !(dt == "tinyint" && tc.Type == "tinyint(1)") && dt != "boolean" && dt != "bool" {
			return " (want boolean, i.e. tinyint(1))"
		}
	case pipeline.TypeFloat:
		if dt != "float" {
			return mismatch
		}
	case pipeline.TypeDouble:
		if dt != "double" {
			return mismatch
		}
	case pipeline.TypeDecimal:
		if dt != "decimal" || tc.Precision != c.Precision || tc.Scale != c.Scale {
			return mismatch
		}
	case pipeline.TypeTimestamp:
		if dt != "datetime" && dt != "timestamp" {
			return mismatch
		}
		if tc.Precision < 3 {
			return " (milliseconds would be lost: want datetime(3) or timestamp(3))"
		}
	case pipeline.TypeDate:
		if dt != "date" {
			return mismatch
		}
	}
	return ""
}

// keyTextMismatch says why a MySQL text column cannot be a key column, "" when it can: it must
// keep every byte of a key and compare keys byte for byte.
func keyTextMismatch(c pipeline.Column, tc tableColumn, def *tableDef) string {
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

func oneOf(s string, set ...string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

// keyColumnFix says how to make a key text column compare byte by byte.
func keyColumnFix(c pipeline.Column, tc tableColumn, def *tableDef) string {
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
	return fmt.Sprintf("ALTER TABLE %s MODIFY %s %s CHARACTER SET utf8mb4 COLLATE %s NOT NULL", MySQL.Ident(def.Table), MySQL.Ident(c.Name), typ, def.NoPadBin)
}

func binaryCollation(c string) bool {
	c = strings.ToLower(c)
	return c == "" || c == "binary" || strings.HasSuffix(c, "_bin")
}

// MySQLDDL renders the CREATE TABLE of the target schema for a MySQL-protocol server (the
// mysql:// twin of a Lindorm table): the types CheckTable accepts, key text columns compared
// byte by byte as Lindorm does (keyCollation: the server's binary NO PAD collation, one of
// KeyCollations), and key lengths within InnoDB's 3,072-byte index limit.
func MySQLDDL(schema pipeline.TargetSchema, keyCollation string) string {
	d := MySQL
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
		Ident:    d.Ident,
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

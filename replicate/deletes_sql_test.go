package replicate

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
)

// Issue 12: "TIMESTAMP key values are written as UTC strings, but Lindorm reads string
// timestamps in the session time zone, UTC+8 by default: every delete of a key with a TIMESTAMP
// column silently misses." The delete file sets the session's zone to UTC before its first
// statement, so its UTC literals name the right instant in a session of any zone.
func TestDeleteFileSetsUTCBeforeItsStatements(t *testing.T) {
	h := deleteHeader("orders", 3, 2, 100)
	set := strings.Index(h, "SET time_zone = '+00:00';\n")
	if set < 0 {
		t.Fatalf("the delete file's header does not set the session's time zone:\n%s", h)
	}
	for _, line := range strings.Split(h, "\n") {
		if line != "" && !strings.HasPrefix(line, "--") && !strings.HasPrefix(line, "SET ") {
			t.Errorf("the header holds a statement other than SET: %q", line)
		}
	}
}

// The same, run for real: a delete file executed by a client whose session is in the server's
// default zone, +08:00 as Lindorm's, deletes the row of a TIMESTAMP key.
func TestDeleteFileDeletesTimestampKeysInAnyZone(t *testing.T) {
	if !mysqltest.MariaDBAvailable() {
		t.Skip("needs MariaDB")
	}
	srv := mysqltest.MariaDB(t, "--default-time-zone=+08:00")
	srv.Exec(t, "CREATE TABLE ev (id varchar(10) NOT NULL, ts timestamp(3) NOT NULL, v int, PRIMARY KEY (id, ts))")
	schema := pipeline.TargetSchema{Table: "ev", KeyLen: 2, Columns: []pipeline.Column{
		{Name: "id", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: 1},
		{Name: "v", Type: pipeline.TypeInteger, KeyPos: -1}}}
	// a client in the server's zone, as `mysql < file.sql` would be
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr, c.DBName, c.MultiStatements = srv.User, "tcp", srv.Addr, srv.Database, true
	conn, _ := mysql.NewConnector(c)
	db := sql.OpenDB(conn)
	defer db.Close()
	db.SetMaxOpenConns(1)
	const ms = 1700000000123
	// the row's instant, inserted unambiguously
	if _, err := db.Exec("INSERT INTO ev VALUES ('a', FROM_UNIXTIME(1700000000.123), 1)"); err != nil {
		t.Fatal(err)
	}
	file := deleteHeader("ev", 0, 0, 0) + string(newDeleteStmt(schema).append(nil, []pipeline.Value{pipeline.Text("a"), pipeline.Int(ms)}))
	if _, err := db.Exec(file); err != nil {
		t.Fatalf("running the delete file: %v\n%s", err, file)
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM ev").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the delete of the TIMESTAMP key %s missed the row (session zone +08:00):\n%s", time.UnixMilli(ms).UTC(), file)
	}
}

package replicate

import (
	"database/sql"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
)

// Before, TIMESTAMP key values were written as UTC strings, but Lindorm reads string timestamps in
// the session time zone, UTC+8 by default: every delete of a key with a TIMESTAMP column silently
// missed. The delete file sets the session's zone to UTC before its first statement, so its UTC
// literals name the right instant in a session of any zone.
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

// A tombstone's key is anyone's text who can produce to the topic: the delete file must delete
// exactly that key and run nothing else, applied with the mysql client as the README says, in
// a session with backslash escapes and in one with NO_BACKSLASH_ESCAPES. With quotes only
// doubled, the key x\'; DROP TABLE canary; --  closed its literal early (the \ escaped the
// first quote) and the rest of the line ran.
func TestDeleteFileRunsNoSQLFromKeys(t *testing.T) {
	if !mysqltest.MariaDBAvailable() {
		t.Skip("needs MariaDB")
	}
	client, err := exec.LookPath("mysql")
	if err != nil {
		t.Skip("needs the mysql client")
	}
	keys := []string{
		`a1fbx\'; DROP TABLE canary; -- `,
		`a1fbx'; DROP TABLE canary; -- `,
		`a1fb\`,
		"a1fb\n'); DROP TABLE canary; -- \x00\r\x1a",
		`a1fbo'brien`,
	}
	schema := pipeline.TargetSchema{Table: "ev", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "pk", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "v", Type: pipeline.TypeInteger, KeyPos: -1}}}
	for _, mode := range []string{"", "NO_BACKSLASH_ESCAPES"} {
		t.Run("sql_mode="+mode, func(t *testing.T) {
			srv := mysqltest.MariaDB(t)
			srv.Exec(t, "CREATE TABLE ev (pk varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY, v int)",
				"CREATE TABLE canary (x int)", "INSERT INTO ev VALUES ('kept', 1)")
			db := srv.DB(t)
			file := []byte(deleteHeader("ev", 0, 0, 0))
			stmt := newDeleteStmt(schema)
			for i, k := range keys {
				if _, err := db.Exec("INSERT INTO ev VALUES (?, ?)", k, i); err != nil {
					t.Fatal(err)
				}
				file = stmt.append(file, []pipeline.Value{pipeline.Text(k)})
			}
			path := filepath.Join(t.TempDir(), "p0000.sql")
			if err := os.WriteFile(path, file, 0o600); err != nil {
				t.Fatal(err)
			}
			host, port, _ := net.SplitHostPort(srv.Addr)
			cmd := exec.Command(client, "--no-defaults", "-h", host, "-P", port, "-u", srv.User, "-D", srv.Database,
				"--init-command=SET SESSION sql_mode='"+mode+"'")
			in, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			cmd.Stdin = in
			out, clientErr := cmd.CombinedOutput()
			var n int
			if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'canary'").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Fatalf("the delete file dropped table canary:\n%s", file)
			}
			if clientErr != nil {
				t.Fatalf("mysql < %s: %v\n%s\nthe file:\n%s", path, clientErr, out, file)
			}
			var left []string
			rows, err := db.Query("SELECT pk FROM ev ORDER BY pk")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var k string
				if err := rows.Scan(&k); err != nil {
					t.Fatal(err)
				}
				left = append(left, k)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(left) != 1 || left[0] != "kept" {
				t.Errorf("after the delete file the table holds %q, want only \"kept\":\n%s", left, file)
			}
		})
	}
}

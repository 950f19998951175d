// Package mysqltest starts MySQL-protocol servers for tests: go-mysql-server in process, always
// available, and a real MariaDB when mariadbd is on PATH (or REKEY_MYSQL_DSN names a server).
package mysqltest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/go-sql-driver/mysql"
)

// Server is a running MySQL-protocol server with a database for the test.
type Server struct {
	Kind     string // "gms" or "mariadb"
	Addr     string // 127.0.0.1:port
	User     string // no password
	Database string

	dataDir string
	args    []string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has ended
	logPath string
}

// URI is the mysql:// target URI of the server's database (extra is appended as the query).
func (s *Server) URI(extra string) string {
	u := "mysql://" + s.User + "@" + s.Addr + "/" + s.Database
	if extra != "" {
		u += "?" + extra
	}
	return u
}

// DDLDialect is the --dialect of `rekey ddl` that prints a table this server creates:
// "mariadb", or "mysql" for go-mysql-server, which follows MySQL 8.
func (s *Server) DDLDialect() string {
	if s.Kind == "mariadb" {
		return "mariadb"
	}
	return "mysql"
}

// DB opens a connection pool to the test database, UTC, multi-statement (for DDL files).
func (s *Server) DB(t testing.TB) *sql.DB {
	t.Helper()
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr, c.DBName = s.User, "tcp", s.Addr, s.Database
	c.MultiStatements = true
	c.Loc = time.UTC
	c.Params = map[string]string{"time_zone": "'+00:00'"}
	conn, err := mysql.NewConnector(c)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

// Exec runs statements on the test database, failing the test on error.
func (s *Server) Exec(t testing.TB, stmts ...string) {
	t.Helper()
	db := s.DB(t)
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

var dbSeq atomic.Int64

// GMS starts go-mysql-server in process on a loopback port with an empty database. Its memory
// tables lose writes that several connections make at once: write through one connection.
func GMS(t testing.TB) *Server {
	t.Helper()
	name := fmt.Sprintf("rekey%d", dbSeq.Add(1))
	db := memory.NewDatabase(name)
	db.BaseDatabase.EnablePrimaryKeyIndexes()
	pro := memory.NewDBProvider(db)
	engine := sqle.NewDefault(pro)
	addr := freeAddr(t)
	srv, err := server.NewServer(server.Config{Protocol: "tcp", Address: addr}, engine, gsql.NewContext, memory.NewSessionBuilder(pro), nil)
	if err != nil {
		t.Fatalf("go-mysql-server: %v", err)
	}
	go srv.Start()
	t.Cleanup(func() { srv.Close() })
	s := &Server{Kind: "gms", Addr: addr, User: "root", Database: name}
	if err := s.await(t, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	return s
}

// MariaDBAvailable tells whether MariaDB tests can run: mariadbd on PATH or REKEY_MYSQL_DSN set.
func MariaDBAvailable() bool {
	if os.Getenv("REKEY_MYSQL_DSN") != "" {
		return true
	}
	_, err := exec.LookPath("mariadbd")
	return err == nil
}

// Run runs a test binary's tests (call it from TestMain) and lets MariaDB share one server
// among them, each test in a database of its own; the server is stopped when they end.
func Run(m *testing.M) int {
	sharing.Store(true)
	code := m.Run()
	sharedMu.Lock()
	if shared != nil {
		shared.stop()
		os.RemoveAll(shared.dataDir)
	}
	sharedMu.Unlock()
	return code
}

var (
	sharing  atomic.Bool
	sharedMu sync.Mutex
	shared   *Server
)

// RequireEnv, set to 1, makes a test that needs MariaDB fail instead of skipping when none is
// available: the real-peer tier (deploy/dev/peers.sh ci-test) sets it.
const RequireEnv = "REKEY_REQUIRE_REAL_PEERS"

// unavailable skips the test for why, or fails it under RequireEnv=1.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s=1: %s", RequireEnv, why)
		return
	}
	t.Skip(why)
}

// MariaDB starts a private MariaDB (its own data folder and port; extra server flags such as
// --default-time-zone=+08:00) and creates a fresh database, or uses the server REKEY_MYSQL_DSN
// names (user@tcp(host:port)/; extra flags are then not applied: the test is skipped when it
// needs them). It skips the test when neither is available.
func MariaDB(t testing.TB, extra ...string) *Server {
	t.Helper()
	if !MariaDBAvailable() {
		unavailable(t, "mariadbd is not on PATH and REKEY_MYSQL_DSN is not set (apt-get install mariadb-server)")
		return nil
	}
	if dsn := os.Getenv("REKEY_MYSQL_DSN"); dsn != "" {
		if len(extra) > 0 {
			t.Skip("REKEY_MYSQL_DSN: this test needs a server started with " + strings.Join(extra, " "))
		}
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatalf("REKEY_MYSQL_DSN: %v", err)
		}
		s := &Server{Kind: "mariadb", Addr: cfg.Addr, User: cfg.User}
		createDatabase(t, s)
		return s
	}
	if len(extra) == 0 && sharing.Load() {
		sharedMu.Lock()
		defer sharedMu.Unlock()
		if shared == nil {
			dir, err := os.MkdirTemp("", "rekey-mariadb-")
			if err != nil {
				t.Fatal(err)
			}
			shared = startMariaDB(t, dir, nil)
		}
		s := *shared
		s.cmd = nil // a test may not restart the shared server
		createDatabase(t, &s)
		return &s
	}
	s := startMariaDB(t, t.TempDir(), extra)
	t.Cleanup(s.stop)
	createDatabase(t, s)
	return s
}

func startMariaDB(t testing.TB, dir string, extra []string) *Server {
	t.Helper()
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		t.Skip("mariadbd is not on PATH and REKEY_MYSQL_DSN is not set (apt-get install mariadb-server)")
	}
	data := filepath.Join(dir, "data")
	// a temp folder of its own: a MariaDB starting up removes the temporary tables it finds in
	// its tmpdir, and with /tmp shared it removed those of another test's bootstrap (CI failed
	// once so: "Could not remove temporary table '/tmp/#sql-temptable-...'", then "Unknown
	// table 'mysql.tmp_user_sys'")
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+data, "--tmpdir="+tmp, "--user=root", "--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	s := &Server{Kind: "mariadb", User: "root", dataDir: dir, logPath: filepath.Join(dir, "mariadb.log")}
	// The port is free when freeAddr closes it, and another test may bind it before mariadbd
	// does: the server then exits at once, and starts again on another port.
	for attempt := 1; ; attempt++ {
		s.Addr = pickAddr(t)
		_, port, _ := net.SplitHostPort(s.Addr)
		s.args = append([]string{"--no-defaults", "--datadir=" + data, "--tmpdir=" + tmp, "--user=root", "--port=" + port, "--bind-address=127.0.0.1",
			"--socket=" + filepath.Join(dir, "sock"), "--pid-file=" + filepath.Join(dir, "pid"), "--log-error=" + s.logPath,
			"--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M", "--max-connections=200"}, extra...)
		s.launch(t, bin)
		err := s.await(t, 60*time.Second)
		if err == nil {
			return s
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			t.Fatalf("%v (attempt %d)", err, attempt)
		}
		t.Logf("mariadb: port %s was taken before the server bound it; starting on another", s.Addr)
	}
}

// errPortTaken: the server exited because its port was bound by another process.
var errPortTaken = errors.New("port taken")

// launch starts mariadbd with the server's arguments.
func (s *Server) launch(t testing.TB, bin string) {
	t.Helper()
	s.cmd = exec.Command(bin, s.args...)
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("mariadbd: %v", err)
	}
	cmd, exited := s.cmd, make(chan struct{})
	s.exited = exited
	go func() { _ = cmd.Wait(); close(exited) }()
}

// await waits until the server answers, or fails with its log when its process (a launched
// mariadbd) exits or it does not answer within the time given.
func (s *Server) await(t testing.TB, within time.Duration) error {
	db := rootDB(t, s)
	defer db.Close()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		var log []byte
		if s.logPath != "" {
			log, _ = os.ReadFile(s.logPath)
		}
		select {
		case <-s.exited: // never, for a server in process (nil)
			if strings.Contains(string(log), "Address already in use") {
				return fmt.Errorf("%s at %s exited: %w\n%s", s.Kind, s.Addr, errPortTaken, log)
			}
			return fmt.Errorf("%s at %s exited before it answered (%v)\n%s", s.Kind, s.Addr, s.cmd.ProcessState, log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s at %s not ready after %s: %v\n%s", s.Kind, s.Addr, within, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// OwnMariaDB starts a MariaDB of the test's own (its own data folder and port, extra server
// flags), never the shared one nor REKEY_MYSQL_DSN's, so that the test may Kill and Start
// it again. It skips the test when mariadbd is not on PATH.
func OwnMariaDB(t testing.TB, extra ...string) *Server {
	t.Helper()
	if _, err := exec.LookPath("mariadbd"); err != nil {
		unavailable(t, "this test kills and restarts a MariaDB of its own: mariadbd is not on PATH (apt-get install mariadb-server; REKEY_MYSQL_DSN is not enough)")
		return nil
	}
	s := startMariaDB(t, t.TempDir(), extra)
	t.Cleanup(s.stop)
	createDatabase(t, s)
	return s
}

// Kill stops the server at once (SIGKILL: a crash); Start brings it back.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// Start starts a killed server again on the same data and port, and waits until it answers.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		t.Fatal("Start: only a MariaDB this package started for the test alone can be restarted (OwnMariaDB)")
	}
	s.launch(t, s.cmd.Path)
	if err := s.await(t, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// Restart kills the server and starts it again on the same data and port with extra server
// flags after those it started with (a configuration changed under running clients, such as
// --sql-mode=NO_BACKSLASH_ESCAPES).
func (s *Server) Restart(t testing.TB, extra ...string) {
	t.Helper()
	s.Kill()
	s.args = append(append([]string(nil), s.args...), extra...)
	s.Start(t)
}

func (s *Server) stop() { s.Kill() }

func createDatabase(t testing.TB, s *Server) {
	t.Helper()
	s.Database = fmt.Sprintf("rekey_%d_%d", os.Getpid(), dbSeq.Add(1))
	db := rootDB(t, s)
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + s.Database); err != nil {
		t.Fatalf("create database: %v", err)
	}
}

func rootDB(t testing.TB, s *Server) *sql.DB {
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr = s.User, "tcp", s.Addr
	conn, err := mysql.NewConnector(c)
	if err != nil {
		t.Fatal(err)
	}
	return sql.OpenDB(conn)
}

// pickAddr picks the address a MariaDB is started on (a test may hand out a taken one).
var pickAddr = freeAddr

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

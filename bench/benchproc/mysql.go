package benchproc

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/go-sql-driver/mysql"
)

// OpenMySQL opens a pool of conns connections to the server at addr (client-side placeholder
// interpolation, UTC), waiting up to a minute for it to answer.
func OpenMySQL(addr, user, dbName string, conns int) (*sql.DB, error) {
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr, c.DBName = user, "tcp", addr, dbName
	c.InterpolateParams = true
	c.Loc = time.UTC
	c.Params = map[string]string{"time_zone": "'+00:00'"}
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return db, nil
		}
		if time.Now().After(deadline) {
			db.Close()
			return nil, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// MariaDB is REKEY_MYSQL_DSN's server, or a private MariaDB started on a free port with its data
// in work/name; stop kills it and removes the data.
func MariaDB(work, name string) (addr, user string, stop func(), err error) {
	if dsn := os.Getenv("REKEY_MYSQL_DSN"); dsn != "" {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return "", "", nil, fmt.Errorf("REKEY_MYSQL_DSN: %w", err)
		}
		return cfg.Addr, cfg.User, func() {}, nil
	}
	dir := filepath.Join(work, name)
	os.RemoveAll(dir)
	if out, err := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+dir+"/data", "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput(); err != nil {
		return "", "", nil, fmt.Errorf("mariadb-install-db (apt-get install mariadb-server): %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", nil, err
	}
	addr = l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("mariadbd", "--no-defaults", "--datadir="+dir+"/data", "--user=root", "--port="+port, "--bind-address=127.0.0.1",
		"--socket="+dir+"/sock", "--pid-file="+dir+"/pid", "--log-error="+dir+"/error.log", "--innodb-buffer-pool-size=512M",
		"--innodb-log-file-size=256M", "--innodb-flush-log-at-trx-commit=2", "--max-allowed-packet=64M")
	if err := cmd.Start(); err != nil {
		return "", "", nil, fmt.Errorf("mariadbd: %w", err)
	}
	return addr, "root", func() { cmd.Process.Kill(); cmd.Wait(); os.RemoveAll(dir) }, nil
}

// FreshDatabase drops and creates dbName on the server at addr and opens one connection to it.
func FreshDatabase(addr, user, dbName string) (*sql.DB, error) {
	admin, err := OpenMySQL(addr, user, "", 1)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	for _, stmt := range []string{"DROP DATABASE IF EXISTS " + dbName, "CREATE DATABASE " + dbName} {
		if _, err := admin.Exec(stmt); err != nil {
			return nil, err
		}
	}
	return OpenMySQL(addr, user, dbName, 1)
}

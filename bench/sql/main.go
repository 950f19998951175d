// Command sql benchmarks `rekey migrate --out mysql://` against a bare go-sql-driver program
// doing the same batched inserts of the same rows on the same number of connections.
//
//	go run ./bench/sql -rekey bench/work/rekey -rows 1000000 -json bench/work/sql.json
//
// A private MariaDB (mariadb-install-db + mariadbd on its own data folder and port; or the server
// REKEY_MYSQL_DSN names, user@tcp(host:port)/) holds the table `rekey ddl --dialect mariadb` (mysql
// for a MySQL 8 server) prints for mappings/orders.yaml. The rows: `rekey gen orders` writes a CSV; rekey migrates it once, and
// the table's rows (the target rows, keys rewritten) are exported to a TSV for the bare side, in
// the source file's order, so that both sides send the same keys in the same order. Then,
// alternated -runs times, the table emptied before each run, each side in its own process:
//
//   - rekey: `rekey migrate --source file:CSV --out mysql://... --sql-conns C` (read, transform,
//     batched upserts of up to 2,000 rows per statement);
//   - bare: this program with -side bare: reads the TSV and sends INSERT ... ON DUPLICATE KEY
//     UPDATE statements of 2,000 rows over C connections (database/sql, placeholders with the
//     driver's client-side interpolation, the usual way to batch with go-sql-driver).
//
// After each rekey run, `rekey verify` checks the table it filled against the CSV (the table holds
// the source's keys: verify reads it by key range rather than looking each key up). Each side's
// time runs from its process start to its exit, its peak RSS from
// wait4. The medians are printed as JSON: {"bare": {...}, "rekey": {...}, "verify": {...},
// "ratio": rekey/bare, "verify_ratio": verify/rekey}.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rekey/rekey/bench/benchproc"
)

const table = "orders"

func main() {
	side := flag.String("side", "", "internal: run one side (bare) against -addr")
	addr := flag.String("addr", "", "internal: the server's address")
	db := flag.String("db", "bench", "database")
	in := flag.String("in", "", "internal: the TSV of target rows for the bare side")
	rows := flag.Int64("rows", 1000000, "rows to migrate")
	conns := flag.Int("conns", 4, "connections (rekey --sql-conns)")
	runs := flag.Int("runs", 3, "alternated runs of each side")
	rekey := flag.String("rekey", "", "path of the rekey binary (built from ./cmd/rekey)")
	mapping := flag.String("mapping", "mappings/orders.yaml", "mapping")
	out := flag.String("json", "", "also write the figures to this file")
	work := flag.String("work", os.TempDir(), "work directory (CSV, TSV, MariaDB data)")
	flag.Parse()
	if *side == "bare" {
		if err := bare(*addr, *db, *in, *conns); err != nil {
			fmt.Fprintln(os.Stderr, "bare:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*rekey, *mapping, *work, *db, *out, *rows, *conns, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench/sql:", err)
		os.Exit(1)
	}
}

func run(rekey, mapping, work, dbName, out string, rows int64, conns, runs int) error {
	if rekey == "" {
		return fmt.Errorf("-rekey is required")
	}
	work, _ = filepath.Abs(work)
	addr, user, stop, err := benchproc.MariaDB(work, "sql-mariadb")
	if err != nil {
		return err
	}
	defer stop()
	db, err := benchproc.FreshDatabase(addr, user, dbName)
	if err != nil {
		return err
	}
	defer db.Close()
	var version string
	if err := db.QueryRow("SELECT VERSION()").Scan(&version); err != nil {
		return err
	}
	dialect := "mysql" // MySQL 8
	if strings.Contains(version, "MariaDB") {
		dialect = "mariadb"
	}
	ddl, err := exec.Command(rekey, "ddl", "-m", mapping, "--dialect", dialect).Output()
	if err != nil {
		return fmt.Errorf("rekey ddl: %w", err)
	}
	if _, err := db.Exec(string(ddl)); err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	csv := filepath.Join(work, fmt.Sprintf("sql-orders-%d.csv", rows))
	if _, err := os.Stat(csv); err != nil {
		if out, err := exec.Command(rekey, "gen", "orders", "--rows", strconv.FormatInt(rows, 10), "--out", csv).CombinedOutput(); err != nil {
			return fmt.Errorf("rekey gen: %v\n%s", err, out)
		}
	}
	uri := "mysql://" + user + "@" + addr + "/" + dbName
	rekeyRun := func() (benchproc.Figures, error) {
		if _, err := db.Exec("TRUNCATE TABLE " + table); err != nil {
			return benchproc.Figures{}, err
		}
		state := filepath.Join(work, "sql-state")
		os.RemoveAll(state)
		start := time.Now()
		cmd := exec.Command(rekey, "migrate", "-m", mapping, "--source", "file:"+csv, "--out", uri, "--sql-conns", strconv.Itoa(conns),
			"--state", state, "--progress", "never", "--max-rejects", "0")
		cmd.Args = append(cmd.Args, strings.Fields(os.Getenv("REKEY_BENCH_ARGS"))...) // e.g. "--workers 8", to compare settings
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return benchproc.Figures{}, fmt.Errorf("rekey migrate: %w", err)
		}
		return benchproc.Measure(rows, time.Since(start), cmd.ProcessState), nil
	}
	// a first rekey run fills the table: its rows, exported, are the bare side's input
	if _, err := rekeyRun(); err != nil {
		return err
	}
	tsv := filepath.Join(work, fmt.Sprintf("sql-rows-%d.tsv", rows))
	if err := export(db, tsv); err != nil {
		return err
	}
	self, _ := os.Executable()
	bareRun := func() (benchproc.Figures, error) {
		if _, err := db.Exec("TRUNCATE TABLE " + table); err != nil {
			return benchproc.Figures{}, err
		}
		start := time.Now()
		cmd := exec.Command(self, "-side", "bare", "-addr", addr, "-db", dbName, "-in", tsv, "-conns", strconv.Itoa(conns))
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return benchproc.Figures{}, fmt.Errorf("bare: %w", err)
		}
		return benchproc.Measure(rows, time.Since(start), cmd.ProcessState), nil
	}
	// verify reads the source again and the table rekey just filled (by key range): it
	// should check the table at least as fast as migrate wrote it
	verifyRun := func() (benchproc.Figures, error) {
		start := time.Now()
		cmd := exec.Command(rekey, "verify", "-m", mapping, "--source", "file:"+csv, "--target", uri, "--progress", "never", "--tmp", work)
		cmd.Args = append(cmd.Args, strings.Fields(os.Getenv("REKEY_BENCH_ARGS"))...)
		cmd.Stderr = os.Stderr
		if out, err := cmd.Output(); err != nil {
			return benchproc.Figures{}, fmt.Errorf("rekey verify: %w\n%s", err, out)
		}
		return benchproc.Measure(rows, time.Since(start), cmd.ProcessState), nil
	}
	var rk, vf, br []benchproc.Figures
	for i := 0; i < runs; i++ {
		f, err := rekeyRun()
		if err != nil {
			return err
		}
		rk = append(rk, f)
		if f, err = verifyRun(); err != nil {
			return err
		}
		vf = append(vf, f)
		if f, err = bareRun(); err != nil {
			return err
		}
		br = append(br, f)
	}
	var n int64
	if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil || n != rows {
		return fmt.Errorf("the bare side left %d rows (%v), want %d", n, err, rows)
	}
	r, v, b := benchproc.Median(rk), benchproc.Median(vf), benchproc.Median(br)
	return benchproc.WriteJSON(out, map[string]any{"rekey": r, "verify": v, "bare": b, "ratio": r.RowsPerSec / b.RowsPerSec,
		"verify_ratio": v.RowsPerSec / r.RowsPerSec, "conns": conns},
		map[string]benchproc.Figures{"rekey": r, "verify": v, "bare": b})
}

// columns of mappings/orders.yaml's target, in the table's order.
var columns = []string{"pk1", "orderid", "channel", "amount", "ts", "status", "location"}

// export writes the table's rows as TSV (NULL as \N), text as the server returns it, in the
// source file's order (orderid is its sequence): the bare side then sends the keys in the order
// rekey does. In key order (the table's scan order) every insert would append to the end of the
// primary key's B-tree, much cheaper for InnoDB than rekey's salted keys in random order, and the
// ratio would measure the key order, not the client.
func export(db *sql.DB, path string) error {
	rows, err := db.Query("SELECT " + strings.Join(columns, ", ") + " FROM " + table + " ORDER BY orderid")
	if err != nil {
		return err
	}
	defer rows.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	vals := make([]sql.RawBytes, len(columns))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			if i > 0 {
				w.WriteByte('\t')
			}
			if v == nil {
				w.WriteString(`\N`)
			} else {
				w.Write(v) // the generated values hold no tab or newline
			}
		}
		w.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return w.Flush()
}

// bare inserts the TSV's rows in statements of 2,000 rows over conns connections.
func bare(addr, dbName, in string, conns int) error {
	db, err := benchproc.OpenMySQL(addr, "root", dbName, conns)
	if err != nil {
		return err
	}
	defer db.Close()
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	const batch = 2000
	var upd []string
	for _, c := range columns[2:] {
		upd = append(upd, c+"=VALUES("+c+")")
	}
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", len(columns)), ",") + ")"
	head := "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES "
	tail := " ON DUPLICATE KEY UPDATE " + strings.Join(upd, ", ")
	full := head + strings.TrimSuffix(strings.Repeat(one+",", batch), ",") + tail
	work := make(chan []any, conns)
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for args := range work {
				q := full
				if n := len(args) / len(columns); n != batch {
					q = head + strings.TrimSuffix(strings.Repeat(one+",", n), ",") + tail
				}
				if _, err := db.ExecContext(context.Background(), q, args...); err != nil {
					once.Do(func() { firstErr = err })
				}
			}
		}()
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	args := make([]any, 0, batch*len(columns))
	for sc.Scan() {
		for _, v := range strings.Split(sc.Text(), "\t") {
			if v == `\N` {
				args = append(args, nil)
			} else {
				args = append(args, v)
			}
		}
		if len(args) == cap(args) {
			work <- args
			args = make([]any, 0, batch*len(columns))
		}
	}
	if len(args) > 0 {
		work <- args
	}
	close(work)
	wg.Wait()
	if err := sc.Err(); err != nil {
		return err
	}
	return firstErr
}

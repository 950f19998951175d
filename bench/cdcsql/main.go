// Command cdcsql benchmarks `rekey replicate` of Debezium's Cassandra change events into a
// MySQL-protocol table against a bare go-sql-driver program applying the same changes.
//
//	go run ./bench/cdcsql -rekey bench/work/rekey -messages 500000 -json bench/work/cdcsql.json
//
// A broker process (this program, -side broker) runs franz-go's kfake and produces the events of
// ks.ev (source/kafka/cdcdemo's table: PRIMARY KEY ((a), b, c), x text, y int), shaped as the
// connector's (cdcdemo.Event, whose shapes a test checks against the real connector's), over 6
// partitions by the partition key a: 55% INSERTs of x and y, 15% UPDATEs of x, 10% of y, 10% cell
// deletes of y (an update setting y to null) and 10% row deletes, over 1M keys. A private
// MariaDB holds the table `rekey ddl` prints for cdcdemo's mapping. Then, alternated -runs times,
// the table emptied before each run, each side in its own process and a consumer group of its
// own:
//
//   - rekey: `rekey replicate --source kafka://...?format=debezium --out mysql://...
//     --sql-conns C`, stopped with SIGTERM once it has read every message (it applies and
//     commits what it read, then exits);
//   - bare: this program with -side bare: one kafka-go group Reader; batches of what has
//     arrived (up to 2,000 messages); each event decoded with encoding/json; the changes
//     sharded by key over C connections and planned as rekey plans them (the same statements):
//     cut where a key comes again, and within a piece the deletes in one DELETE ... WHERE (a, b,
//     c) IN (...), the upserts of each column set in one INSERT ... ON DUPLICATE KEY UPDATE of
//     up to 2,000 rows, each followed by the DELETE of the rows it left without a value when it
//     wrote only NULLs (a wide table keeps no row of NULLs); the batch's offsets committed once
//     it is applied.
//
// Both sides must leave the same table: its row count and a checksum of its rows are compared
// after every run. Each side's time runs from its process start to its exit, its peak RSS from
// wait4. The medians are printed as JSON: {"bare": {...}, "rekey": {...}, "ratio": rekey/bare}.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rekey/rekey/bench/benchproc"
	"github.com/rekey/rekey/source/kafka/cdcdemo"
)

const (
	partitions = 6
	topic      = "cdc.ks.ev"
	table      = "ev"
	maxRows    = 2000 // rows per statement, rekey's default
)

func main() {
	side := flag.String("side", "", "internal: run one side (broker, bare)")
	brokers := flag.String("brokers", "", "internal: the broker's addresses")
	addr := flag.String("addr", "", "internal: the SQL server's address")
	group := flag.String("group", "bare", "internal: the bare side's consumer group")
	db := flag.String("db", "bench", "database")
	messages := flag.Int64("messages", 500000, "change events to produce and apply")
	conns := flag.Int("conns", 4, "connections (rekey --sql-conns)")
	runs := flag.Int("runs", 3, "alternated runs of each side")
	rekey := flag.String("rekey", "", "path of the rekey binary (built from ./cmd/rekey)")
	out := flag.String("json", "", "also write the figures to this file")
	work := flag.String("work", os.TempDir(), "work directory (mapping, state, MariaDB data)")
	flag.Parse()
	var err error
	switch *side {
	case "broker":
		err = broker(*messages)
	case "bare":
		err = bare(strings.Split(*brokers, ","), *group, *addr, *db, *messages, *conns)
	case "":
		err = run(*rekey, *work, *db, *out, *messages, *conns, *runs)
	default:
		err = fmt.Errorf("unknown -side %q", *side)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/cdcsql:", err)
		os.Exit(1)
	}
}

func run(rekey, work, dbName, out string, n int64, conns, runs int) error {
	if rekey == "" {
		return fmt.Errorf("-rekey is required (go build -o bench/work/rekey ./cmd/rekey)")
	}
	work, _ = filepath.Abs(work)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	addr, user, stop, err := benchproc.MariaDB(work, "cdcsql-mariadb")
	if err != nil {
		return err
	}
	defer stop()
	db, err := benchproc.FreshDatabase(addr, user, dbName)
	if err != nil {
		return err
	}
	defer db.Close()
	mapping := filepath.Join(work, "cdcsql-ev.yaml")
	if err := os.WriteFile(mapping, []byte(cdcdemo.Mapping), 0o644); err != nil {
		return err
	}
	ddl, err := exec.Command(rekey, "ddl", "-m", mapping, "--dialect", "mariadb").Output()
	if err != nil {
		return fmt.Errorf("rekey ddl: %w", err)
	}
	if _, err := db.Exec(string(ddl)); err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	brk, err := benchproc.StartServer(self, "-side", "broker", "-messages", fmt.Sprint(n))
	if err != nil {
		return err
	}
	defer brk.Stop()
	uri := "mysql://" + user + "@" + addr + "/" + dbName

	rekeyRun := func(i int) (benchproc.Figures, error) {
		state := filepath.Join(work, "cdcsql-state")
		os.RemoveAll(state)
		metrics, err := freeAddr()
		if err != nil {
			return benchproc.Figures{}, err
		}
		start := time.Now()
		cmd := exec.Command(rekey, "replicate", "-m", mapping, "--source",
			fmt.Sprintf("kafka://%s/%s?group=rekey-%d&format=debezium", strings.Join(brk.Addrs, ","), topic, i),
			"--out", uri, "--sql-conns", strconv.Itoa(conns), "--state", state, "--progress", "never", "--metrics-addr", metrics)
		cmd.Stderr = os.Stderr
		cmd.Stdout = os.Stderr // its summary, in the log
		if err := cmd.Start(); err != nil {
			return benchproc.Figures{}, err
		}
		if err := benchproc.WaitRead(metrics, n, 10*time.Minute); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return benchproc.Figures{}, err
		}
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			return benchproc.Figures{}, fmt.Errorf("rekey replicate: %w", err)
		}
		return benchproc.Measure(n, time.Since(start), cmd.ProcessState), nil
	}
	bareRun := func(i int) (benchproc.Figures, error) {
		start := time.Now()
		cmd := exec.Command(self, "-side", "bare", "-brokers", strings.Join(brk.Addrs, ","), "-group", fmt.Sprint("bare-", i),
			"-addr", addr, "-db", dbName, "-messages", fmt.Sprint(n), "-conns", strconv.Itoa(conns))
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return benchproc.Figures{}, fmt.Errorf("bare: %w", err)
		}
		return benchproc.Measure(n, time.Since(start), cmd.ProcessState), nil
	}
	load0 := benchproc.LoadAvg()
	var rk, br []benchproc.Figures
	var want string
	for i := 0; i < runs; i++ {
		for _, s := range []struct {
			name string
			run  func(int) (benchproc.Figures, error)
			into *[]benchproc.Figures
		}{{"bare", bareRun, &br}, {"rekey", rekeyRun, &rk}} {
			if _, err := db.Exec("TRUNCATE TABLE " + table); err != nil {
				return err
			}
			f, err := s.run(i)
			if err != nil {
				return err
			}
			got, err := tableSum(db)
			if err != nil {
				return err
			}
			if want == "" {
				want = got
			} else if got != want {
				return fmt.Errorf("run %d: %s left the table %s, the first run %s", i+1, s.name, got, want)
			}
			*s.into = append(*s.into, f)
			fmt.Fprintf(os.Stderr, "run %d %s: %.0f changes/s, %.1f CPU s, table %s\n", i+1, s.name, f.RowsPerSec, f.CPUSeconds, got)
		}
	}
	r, b := benchproc.Median(rk), benchproc.Median(br)
	return benchproc.WriteJSON(out, map[string]any{"rekey": r, "bare": b, "ratio": r.RowsPerSec / b.RowsPerSec, "conns": conns,
		"table": want, "loadavg_start": load0, "loadavg_end": benchproc.LoadAvg()},
		map[string]benchproc.Figures{"rekey": r, "bare": b})
}

// tableSum is the table's row count and a checksum of its rows.
func tableSum(db *sql.DB) (string, error) {
	var rows, sum int64
	err := db.QueryRow("SELECT COUNT(*), COALESCE(SUM(CRC32(CONCAT_WS('|', a, b, c, IFNULL(x, '~'), IFNULL(y, '~')))), 0) FROM "+table).Scan(&rows, &sum)
	return fmt.Sprintf("%d rows, sum %d", rows, sum), err
}

// broker runs kfake, produces n change events, prints the listen addresses and serves until
// stdin closes.
func broker(n int64) error {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cluster.Close()
	addrs := cluster.ListenAddrs()
	t0 := time.Now()
	w := &kafkago.Writer{Addr: kafkago.TCP(addrs...), Topic: topic, Balancer: partitionOf{}, BatchSize: 5000,
		BatchBytes: 8 << 20, BatchTimeout: 10 * time.Millisecond, RequiredAcks: kafkago.RequireOne}
	defer w.Close()
	rng := rand.New(rand.NewPCG(7, 11))
	wt := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	batch := make([]kafkago.Message, 0, 5000)
	for i := int64(0); i < n; i++ {
		batch = append(batch, event(rng, wt.Add(time.Duration(i)*time.Microsecond)))
		if len(batch) == cap(batch) || i == n-1 {
			if err := w.WriteMessages(context.Background(), batch...); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	fmt.Fprintf(os.Stderr, "produced %d change events in %v\n", n, time.Since(t0).Round(time.Millisecond))
	fmt.Println(strings.Join(addrs, ","))
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// partitionOf places a message in the partition cdcdemo.Event chose (by the partition key).
type partitionOf struct{}

func (partitionOf) Balance(m kafkago.Message, _ ...int) int { return m.Partition }

// event is one change of a random key of 1M.
func event(rng *rand.Rand, wt time.Time) kafkago.Message {
	a, b, c := rng.IntN(2000), rng.IntN(50), rng.IntN(10)
	key := fmt.Sprintf(`{"a":%d,"b":%d,"c":%d}`, a, b, c)
	cells := []string{`"a":` + cdcdemo.Cell(strconv.Itoa(a)), `"b":` + cdcdemo.Cell(strconv.Itoa(b)), `"c":` + cdcdemo.Cell(strconv.Itoa(c))}
	x := `"x":` + cdcdemo.Cell(`"s`+strconv.Itoa(rng.IntN(100000))+`"`)
	y := `"y":` + cdcdemo.Cell(strconv.Itoa(rng.IntN(100000)))
	switch r := rng.IntN(20); {
	case r < 11:
		return cdcdemo.Event("i", wt, key, a%partitions, append(cells, x, y)...)
	case r < 14:
		return cdcdemo.Event("u", wt, key, a%partitions, append(cells, x)...)
	case r < 16:
		return cdcdemo.Event("u", wt, key, a%partitions, append(cells, y)...)
	case r < 18:
		return cdcdemo.Event("u", wt, key, a%partitions, append(cells, `"y":`+cdcdemo.NullCell())...)
	default:
		return cdcdemo.Event("d", wt, key, a%partitions, append(cells, `"x":`+cdcdemo.DeletedCell(), `"y":`+cdcdemo.DeletedCell())...)
	}
}

// bare applies n events of the topic to the table with go-sql-driver, in batches of what has
// arrived, and commits each batch's offsets once it is applied.
func bare(brokers []string, group, addr, dbName string, n int64, conns int) error {
	db, err := benchproc.OpenMySQL(addr, "root", dbName, conns)
	if err != nil {
		return err
	}
	defer db.Close()
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers: brokers, GroupID: group, Topic: topic, StartOffset: kafkago.FirstOffset,
		MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond, QueueCapacity: 4096,
		SessionTimeout: 6 * time.Second,
	})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	a := newApplier(db, conns)
	var msgs []kafkago.Message
	for read := int64(0); read < n; {
		msgs = msgs[:0]
		m, err := r.FetchMessage(ctx) // wait for the first
		if err != nil {
			return fmt.Errorf("after %d messages: %w", read, err)
		}
		msgs = append(msgs, m)
		for len(msgs) < maxRows && read+int64(len(msgs)) < n {
			// then take what has arrived
			short, cancel := context.WithTimeout(ctx, time.Millisecond)
			m, err := r.FetchMessage(short)
			cancel()
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					break
				}
				return err
			}
			msgs = append(msgs, m)
		}
		if err := a.apply(ctx, msgs); err != nil {
			return err
		}
		if err := r.CommitMessages(ctx, msgs...); err != nil {
			return err
		}
		read += int64(len(msgs))
	}
	return nil
}

// change is one decoded event: the key, the columns it sets (x, y) and their values (nil: NULL).
type change struct {
	key    [3]int64
	delete bool
	setX   bool
	setY   bool
	x      *string
	y      *int64
}

type cell struct {
	Value json.RawMessage `json:"value"`
}

type envelope struct {
	Op    string           `json:"op"`
	After map[string]*cell `json:"after"`
}

func decode(v []byte) (change, error) {
	var e envelope
	var ch change
	if err := json.Unmarshal(v, &e); err != nil {
		return ch, err
	}
	for i, col := range []string{"a", "b", "c"} {
		c := e.After[col]
		if c == nil {
			return ch, fmt.Errorf("no %s in %s", col, v)
		}
		k, err := strconv.ParseInt(string(c.Value), 10, 64)
		if err != nil {
			return ch, err
		}
		ch.key[i] = k
	}
	if e.Op == "d" {
		ch.delete = true
		return ch, nil
	}
	if c := e.After["x"]; c != nil {
		ch.setX = true
		if string(c.Value) != "null" {
			var s string
			if err := json.Unmarshal(c.Value, &s); err != nil {
				return ch, err
			}
			ch.x = &s
		}
	}
	if c := e.After["y"]; c != nil {
		ch.setY = true
		if string(c.Value) != "null" {
			y, err := strconv.ParseInt(string(c.Value), 10, 64)
			if err != nil {
				return ch, err
			}
			ch.y = &y
		}
	}
	return ch, nil
}

// shape is the kind of statement a change goes in: a delete, or an upsert of some columns.
func (c *change) shape() int {
	if c.delete {
		return 0
	}
	return 1 + b2i(c.setX) + 2*b2i(c.setY)
}

func (c *change) empty() bool { return !c.delete && c.x == nil && c.y == nil }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

type applier struct {
	db     *sql.DB
	shards [][]change
	seed   maphash.Seed
}

func newApplier(db *sql.DB, conns int) *applier {
	return &applier{db: db, shards: make([][]change, conns), seed: maphash.MakeSeed()}
}

// apply decodes the messages and runs their changes: sharded by key, each shard on a connection
// of its own, in order.
func (a *applier) apply(ctx context.Context, msgs []kafkago.Message) error {
	for i := range a.shards {
		a.shards[i] = a.shards[i][:0]
	}
	for _, m := range msgs {
		ch, err := decode(m.Value)
		if err != nil {
			return fmt.Errorf("offset %d: %w", m.Offset, err)
		}
		var h maphash.Hash
		h.SetSeed(a.seed)
		fmt.Fprint(&h, ch.key)
		s := h.Sum64() % uint64(len(a.shards))
		a.shards[s] = append(a.shards[s], ch)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(a.shards))
	for i, chs := range a.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = a.runShard(ctx, chs)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runShard runs a shard's changes as rekey plans them: cut into pieces where a key comes
// again, and within a piece (every key once) the deletes in one statement, then the upserts of
// each column set in one statement each (in the order the sets first appear), up to 2,000 rows,
// each statement's rows in key order.
func (a *applier) runShard(ctx context.Context, chs []change) error {
	conn, err := a.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var order []int
	groups := map[int][]change{}
	seen := map[[3]int64]bool{}
	flush := func() error {
		for _, sh := range order {
			g := groups[sh]
			slices.SortFunc(g, func(x, y change) int { return slices.Compare(x.key[:], y.key[:]) })
			for len(g) > 0 {
				n := min(len(g), maxRows)
				if err := runStatement(ctx, conn, g[:n]); err != nil {
					return err
				}
				g = g[n:]
			}
		}
		order = order[:0]
		clear(groups)
		clear(seen)
		return nil
	}
	for _, c := range chs {
		if seen[c.key] {
			if err := flush(); err != nil {
				return err
			}
		}
		seen[c.key] = true
		sh := c.shape()
		if _, ok := groups[sh]; !ok {
			order = append(order, sh)
		}
		groups[sh] = append(groups[sh], c)
	}
	return flush()
}

// runStatement sends one statement of changes of one shape, and the delete of the rows left
// without a value by upserts that write only NULLs.
func runStatement(ctx context.Context, conn *sql.Conn, chs []change) error {
	var b strings.Builder
	keyTuple := func(c *change) {
		fmt.Fprintf(&b, "(%d,%d,%d)", c.key[0], c.key[1], c.key[2])
	}
	if chs[0].delete {
		b.WriteString("DELETE FROM " + table + " WHERE (a, b, c) IN (")
		for i := range chs {
			if i > 0 {
				b.WriteByte(',')
			}
			keyTuple(&chs[i])
		}
		b.WriteByte(')')
		return execRetry(ctx, conn, b.String())
	}
	cols := []string{"a", "b", "c"}
	if chs[0].setX {
		cols = append(cols, "x")
	}
	if chs[0].setY {
		cols = append(cols, "y")
	}
	b.WriteString("INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES ")
	var empty []int
	for i := range chs {
		c := &chs[i]
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "(%d,%d,%d", c.key[0], c.key[1], c.key[2])
		if c.setX {
			if c.x == nil {
				b.WriteString(",NULL")
			} else {
				b.WriteString(",'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(*c.x) + "'")
			}
		}
		if c.setY {
			if c.y == nil {
				b.WriteString(",NULL")
			} else {
				b.WriteString("," + strconv.FormatInt(*c.y, 10))
			}
		}
		b.WriteByte(')')
		if c.empty() {
			empty = append(empty, i)
		}
	}
	b.WriteString(" ON DUPLICATE KEY UPDATE ")
	for i, c := range cols[3:] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c + "=VALUES(" + c + ")")
	}
	if err := execRetry(ctx, conn, b.String()); err != nil {
		return err
	}
	if len(empty) == 0 {
		return nil
	}
	b.Reset()
	b.WriteString("DELETE FROM " + table + " WHERE (a, b, c) IN (")
	for j, i := range empty {
		if j > 0 {
			b.WriteByte(',')
		}
		keyTuple(&chs[i])
	}
	b.WriteString(") AND x IS NULL AND y IS NULL")
	return execRetry(ctx, conn, b.String())
}

// execRetry runs a statement, at once again when InnoDB chose it as a deadlock's victim
// (statements of several connections lock gaps of the same index), as rekey does.
func execRetry(ctx context.Context, conn *sql.Conn, stmt string) error {
	for {
		_, err := conn.ExecContext(ctx, stmt)
		var me *mysql.MySQLError
		if errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205) {
			continue
		}
		return err
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

package main

import (
	"context"
	"crypto/md5"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// End-to-end: replicate a topic with updates and deletes (JSON and Debezium) into MariaDB while
// SIGKILLing rekey several times and restarting MariaDB once; the final table must equal the latest
// event per key, with deleted keys absent.
//
// Two topics of 4 partitions, one of plain JSON rows (deletes as tombstones) and one of Debezium
// events (c/r/u, d followed by its tombstone, half of them in the JSON converter's schema/payload
// wrapping), each replicated by its own `rekey replicate --out mysql://` process into its own
// table of one MariaDB. Half of each topic is there before rekey starts, the rest is produced
// while it runs. Each process is SIGKILLed 3 to 5 times, each time once it applies messages again,
// at a kill point of the seeded plan (after its N-th statement, the batch's others not run; after
// a batch applied, its offset not committed; after an offset commit; at once when it has nothing
// left to apply), and started again at once. MariaDB is SIGKILLed once in the middle, with both
// processes running, and one of them is SIGKILLed and started again while MariaDB is down;
// MariaDB starts again once the other has retried a statement against it and the restarted one
// has failed to connect twice. Both must ride
// through it (a transient error, retried with backoff and counted, at start as in a statement),
// not exit. Finally the groups' committed offsets must reach the ends of the topics, each table
// must hold the latest event of every key (status, amount and timestamp), deleted keys absent,
// and the three bad messages of each topic (undecodable, unsupported, a key too long for the
// table's column) must each be in the rejects exactly once, though the state folder starts with
// the rejects file a crash before an offset commit leaves (staleRejects). The seed is logged;
// REKEY_E2E_SEED=N runs the same messages and kill plan.
func TestReplicateIntoMariaDBSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the kill test runs for about 30 s")
	}
	srv := mysqltest.OwnMariaDB(t)
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("REKEY_E2E_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("REKEY_E2E_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (REKEY_E2E_SEED=%d runs the same messages and kill plan)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 12))

	c := kafkatest.Start(t)
	session := "2s"
	if kafkatest.Real() {
		session = "6s" // Kafka's default group.min.session.timeout.ms
	}
	// kfake keeps a member killed while joining in the rebalancing group until the members'
	// rebalance timeout ends (Kafka drops it after its session timeout): with the default 60 s,
	// a restart after rapid kills sat in "joining" past the drain's deadline
	rebalance := "4s"
	ddl := mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect())
	dir := t.TempDir()
	var streams []*e2eStream
	for _, format := range []string{"json", "debezium"} {
		s := &e2eStream{rekeyProc: rekeyProc{name: format, exe: exe}, format: format, table: "orders_" + format, group: c.Group("e2e-" + format)}
		srv.Exec(t, strings.Replace(ddl, "`orders`", "`"+s.table+"`", 1))
		s.topic = c.CreateTopic(t, "e2e-"+format, e2ePartitions)
		s.generate(rng, 3000, 3000)
		s.state = filepath.Join(dir, format, "state")
		s.logPath = filepath.Join(dir, format, "rekey.log")
		s.armPath = filepath.Join(dir, format, "kill-arm")
		os.MkdirAll(filepath.Dir(s.logPath), 0o755)
		s.args = []string{"replicate", "-m", mapping,
			"--source", "kafka://" + strings.Join(c.Brokers, ",") + "/" + s.topic + "?group=" + s.group + "&format=" + format,
			"--out", srv.URI("table=" + s.table), "--sql-conns", "4", "--state", s.state,
			"--progress", "never", "--session-timeout", session, "--rebalance-timeout", rebalance, "--log-level", "info"}
		c.Produce(t, s.topic, s.msgs[:s.pre]...)
		s.staleRejects(t)
		streams = append(streams, s)
		t.Cleanup(s.stop)
	}

	// the rest of each topic is produced while rekey is killed and restarted
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	produced := make(chan error, len(streams))
	outage := make(chan struct{})
	for _, s := range streams {
		go func() { produced <- s.produceLive(ctx, c.Writer(s.topic), 16*time.Second, outage) }()
	}
	for _, s := range streams {
		s.start(t)
	}

	// the plan: every stream's kills in a random order, MariaDB's restart half way
	var plan []*e2eStream
	for _, s := range streams {
		for range 3 + rng.IntN(3) {
			plan = append(plan, s)
		}
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	caughtUp := func(s *e2eStream) bool {
		committed := c.Committed(t, s.group, s.topic, e2ePartitions)
		for p, end := range s.goal() {
			if committed[p] != end {
				return false
			}
		}
		return true
	}
	for i, s := range plan {
		if i == len(plan)/2 {
			restartMariaDB(t, srv, streams, streams[rng.IntN(len(streams))], caughtUp, func() {
				for _, s := range streams {
					s.released = true
				}
				close(outage)
			})
		}
		s.waitApplying(t, caughtUp)
		// the kill point is the seeded plan's: after a statement (the batch's others not run),
		// after a batch applied (its offset not committed), or after an offset commit
		at := [...]string{"statement:" + strconv.Itoa(1+rng.IntN(8)), "applied:" + strconv.Itoa(1+rng.IntN(3)),
			"offset:" + strconv.Itoa(1+rng.IntN(3))}[rng.IntN(3)]
		s.killAt(t, at, caughtUp)
		s.start(t)
	}
	for range streams {
		if err := <-produced; err != nil {
			t.Fatalf("producing the live messages: %v", err)
		}
	}

	// drain: every message applied and its offset committed
	for _, s := range streams {
		wait.For(t, func() bool { s.checkAlive(t); return caughtUp(s) }, s.name+": every offset committed")
	}
	db := srv.DB(t)
	for _, s := range streams {
		// 1 when this last process rejected some of the bad messages, spread over the starts
		if code := s.terminate(t); code != 0 && code != exitRejects {
			t.Errorf("%s: exit %d after SIGTERM\n%s", s.name, code, s.logTail())
		}
		got := s.checkTable(t, db)
		s.checkRejects(t, s.state)
		t.Logf("%s: %d messages, %d keys in the table, %d starts, %d SIGKILLs (%d of them with nothing left to apply; kill points %s)",
			s.name, len(s.msgs), len(got), s.starts, s.kills, s.idleKills, strings.Join(s.killPoints, " "))
	}
}

const e2ePartitions = 4

// e2eStream is one topic replicated into one table by a rekey process that the test kills.
type e2eStream struct {
	format, topic, group, table, state string

	msgs       []kafkago.Message // Offset: the offset it gets
	armPath    string            // the process's killArmEnv file
	killPoints []string          // where the plan's kills happened
	pre        int               // msgs[:pre] are produced before rekey starts
	ends       []int64           // by partition: the offset after its last message
	// released: the messages held for MariaDB's outage are produced (until then the partitions
	// end before them)
	released bool
	want     map[string]string   // pk1/orderid -> "status|amount|ts" of the key's latest event
	poison   map[[2]int64]string // (partition, offset) -> the stage that must reject it

	rekeyProc
	idleKills int // kills with nothing left to apply
}

type e2eRow struct {
	user   string
	id     int
	status string
	cents  int
}

func (r *e2eRow) key() string {
	sum := md5.Sum([]byte(r.user))
	return hex.EncodeToString(sum[:])[:4] + r.user + "/" + strconv.Itoa(r.id)
}

func (r *e2eRow) kafkaKey() []byte {
	return []byte(fmt.Sprintf(`{"userid":%q,"orderid":%d}`, r.user, r.id))
}

// e2eTS is every row's ts: 2024-05-01T10:00:00.123Z, as JSON gives it and as Debezium's
// io.debezium.time.Timestamp (epoch milliseconds) does.
const (
	e2eTSText   = "2024-05-01T10:00:00.123Z"
	e2eTSMillis = 1714557600123
	e2eTSTable  = "2024-05-01 10:00:00.123"
)

// e2eSchema is the JSON converter's schema of the Debezium envelope (the parts rekey reads).
const e2eSchema = `{"type":"struct","name":"shop.orders.Envelope","fields":[` +
	`{"type":"struct","optional":true,"field":"before","fields":[{"type":"string","field":"userid"},{"type":"int64","field":"orderid"},{"type":"int64","name":"io.debezium.time.Timestamp","field":"ts"}]},` +
	`{"type":"struct","optional":true,"field":"after","fields":[{"type":"string","field":"userid"},{"type":"int64","field":"orderid"},{"type":"int64","name":"io.debezium.time.Timestamp","field":"ts"}]},` +
	`{"type":"string","field":"op"}]}`

func (r *e2eRow) image(format string) string {
	ts := strconv.Quote(e2eTSText)
	if format == "debezium" {
		ts = strconv.Itoa(e2eTSMillis)
	}
	return fmt.Sprintf(`{"userid":%q,"orderid":%d,"channel":"jd","ts":%s,"status":%q,"location":"hz","amount":"%d.%02d"}`,
		r.user, r.id, ts, r.status, r.cents/100, r.cents%100)
}

// generate makes pre+live change events (a key's partition is its orderid mod 4), pre of them
// produced before rekey starts: upserts, and deletes a fifth of the time; three of them are bad.
// want is the latest state of every key, read off the events as they are made.
func (s *e2eStream) generate(rng *rand.Rand, pre, live int) {
	n := pre + live
	s.want, s.poison, s.ends = map[string]string{}, map[[2]int64]string{}, make([]int64, e2ePartitions)
	undecodable := 1 + rng.IntN(pre-1)  // before rekey starts
	unsupported := pre + rng.IntN(live) // while it runs
	refused := pre + rng.IntN(live)     // while it runs
	if refused == unsupported {
		refused = pre + (refused-pre+1)%live
	}
	cur := map[int]*e2eRow{}
	add := func(p int, key, value []byte, stage string) {
		s.msgs = append(s.msgs, kafkago.Message{Partition: p, Key: key, Value: value, Offset: s.ends[p]})
		if stage != "" {
			s.poison[[2]int64{int64(p), s.ends[p]}] = stage
		}
		s.ends[p]++
	}
	envelope := func(i int, body string) []byte {
		if i%2 == 0 {
			return []byte(`{"schema":` + e2eSchema + `,"payload":` + body + `}`)
		}
		return []byte(body)
	}
	for i := 0; i < n; i++ {
		if i == pre {
			s.pre = len(s.msgs)
		}
		// half the events update 60 hot keys again and again; the other half go to a window of
		// 40 keys that slides along the stream, so that keys see their last event all along it
		// and a change lost anywhere (a batch whose offset was committed but not applied) shows
		id := rng.IntN(60)
		if rng.IntN(2) == 0 {
			id = 60 + i/8 + rng.IntN(40)
		}
		r := &e2eRow{user: fmt.Sprintf("user%03d", id%60), id: id, status: fmt.Sprintf("%s%d", s.format[:1], i), cents: rng.IntN(100000)}
		p := id % e2ePartitions
		del := rng.IntN(5) == 0
		switch {
		case i == undecodable:
			add(p, r.kafkaKey(), []byte(`{"userid":`), "source")
		case i == unsupported && s.format == "json":
			add(p, r.kafkaKey(), []byte(fmt.Sprintf(`{"userid":%q,"orderid":"not a number","status":"x"}`, r.user)), "source")
		case i == unsupported:
			add(p, nil, envelope(i, `{"before":null,"after":null,"op":"t","ts_ms":1}`), "source")
		case i == refused:
			// pk1 is varchar(766) in the table: the server refuses the row (Data too long)
			long := &e2eRow{user: strings.Repeat("z", 800), id: 100000 + i, status: "refused", cents: 1}
			if s.format == "json" {
				add(p, long.kafkaKey(), []byte(long.image("json")), "sink")
			} else {
				add(p, long.kafkaKey(), envelope(i, `{"before":null,"after":`+long.image("debezium")+`,"op":"c","ts_ms":1}`), "sink")
			}
		case del && s.format == "json":
			add(p, r.kafkaKey(), nil, "") // a tombstone: of a key that may not exist, harmless
			delete(s.want, r.key())
		case del && s.format == "debezium" && cur[id] != nil:
			// Debezium: the delete event, then its tombstone
			add(p, r.kafkaKey(), envelope(i, `{"before":`+cur[id].image("debezium")+`,"after":null,"op":"d","ts_ms":1}`), "")
			add(p, r.kafkaKey(), nil, "")
			delete(cur, id)
			delete(s.want, r.key())
		default:
			if s.format == "json" {
				add(p, r.kafkaKey(), []byte(r.image("json")), "")
			} else {
				op, before := "c", "null"
				if cur[id] != nil {
					op, before = "u", cur[id].image("debezium")
				} else if i < pre/3 {
					op = "r" // the snapshot
				}
				add(p, r.kafkaKey(), envelope(i, `{"before":`+before+`,"after":`+r.image("debezium")+`,"op":"`+op+`","ts_ms":1,"source":{"connector":"mysql","db":"shop","table":"orders"}}`), "")
			}
			cur[id] = r
			s.want[r.key()] = fmt.Sprintf("%s|%d.%02d|%s", r.status, r.cents/100, r.cents%100, e2eTSTable)
		}
	}
}

// staleRejects leaves in the state folder what a crash between making a batch's rejects durable
// and committing its offset leaves: the rejects file of a batch (from offset 0 to the
// undecodable message) that will be read again, and the temporary file of a kill while writing
// it. Its replay must replace both, not add to them.
func (s *e2eStream) staleRejects(t *testing.T) {
	t.Helper()
	for _, m := range s.msgs[:s.pre] {
		at := [2]int64{int64(m.Partition), m.Offset}
		if s.poison[at] == "" {
			continue
		}
		line, _ := json.Marshal(&output.Reject{Position: fmt.Sprintf("kafka:%s/%d:%d", s.topic, m.Partition, m.Offset),
			Stage: "source", Code: "parse", Message: "invalid JSON (a run that crashed before committing)", Raw: string(m.Value),
			LogPosition: &output.LogPosition{Topic: s.topic, Partition: m.Partition, Offset: m.Offset}})
		dir := filepath.Join(s.state, output.RejectsDir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(s.state, filepath.FromSlash(output.RollRejectsFile(m.Partition, 0, m.Offset)))
		if err := os.WriteFile(name, append(line, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
		// and what a kill in the middle of writing that file leaves: its temporary name
		if err := os.WriteFile(atomicfile.TempPath(name), append(line, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("no bad message among the first ones")
}

// produceLive produces msgs[pre:] in small batches spread over about d; with an outage channel,
// the last e2eHeld of them only once it is closed.
func (s *e2eStream) produceLive(ctx context.Context, w *kafkago.Writer, d time.Duration, outage <-chan struct{}) error {
	defer w.Close()
	live := s.msgs[s.pre:]
	var held []kafkago.Message
	if outage != nil {
		// the last messages wait for MariaDB's outage: then every stream has messages to apply
		// while it is down, however long the kills before it took (a real broker's rejoins take
		// seconds)
		held = live[len(live)-e2eHeld:]
		live = live[:len(live)-e2eHeld]
	}
	const chunk = 25
	tick := time.NewTicker(d / time.Duration(len(live)/chunk+1))
	defer tick.Stop()
	for len(live) > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		k := min(chunk, len(live))
		if err := w.WriteMessages(ctx, live[:k]...); err != nil {
			return err
		}
		live = live[k:]
	}
	if outage == nil {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-outage:
	}
	return w.WriteMessages(ctx, held...)
}

// e2eHeld is how many of a stream's live messages are produced only once MariaDB is down.
const e2eHeld = 100

// goal is where the partitions end by now: ends, or before the held messages until released.
func (s *e2eStream) goal() []int64 {
	if s.released {
		return s.ends
	}
	goal := append([]int64(nil), s.ends...)
	for _, m := range s.msgs[len(s.msgs)-e2eHeld:] {
		goal[m.Partition]--
	}
	return goal
}

// waitApplying waits until the process has applied messages since it started (it rejoined the
// group and reads its partitions again), so that a kill lands in the middle of the stream; once
// the topic is fully applied, until it consumes its partitions again. (Not earlier: a member
// killed while it joins the group may hold the next start back until the group's rebalance
// timeout, a minute, on kfake; this test is about the SQL path.)
func (s *e2eStream) waitApplying(t *testing.T, caughtUp func(*e2eStream) bool) {
	t.Helper()
	polls := 0
	wait.For(t, func() bool {
		s.checkAlive(t)
		if n, ok := s.metric("rekey_messages_in_total"); ok && n > 0 {
			return true
		}
		// the offsets are read from the broker now and then, not at every poll
		if polls++; polls%10 == 0 {
			if n, ok := s.metric("rekey_assigned_partitions"); ok && n == e2ePartitions && caughtUp(s) {
				return true
			}
		}
		return false
	}, fmt.Sprintf("%s to apply messages after start %d", s.name, s.starts))
}

// killArmEnv names a file through which a test arms the kill point of a running rekey process:
// once the file holds STEP:N (a step of killAtEnv, or "statement": a statement into a SQL table
// succeeded), the process SIGKILLs itself at the N-th such step after that; STEP:N:stop, it
// SIGSTOPs itself there instead (a paused process), and goes on from there once continued.
const killArmEnv = "REKEY_TEST_KILL_ARM"

// processHooks are the replicator's fault hooks of a rekey process a test starts: killAtEnv's
// kill point, fixed at its start, or killArmEnv's, armed while it runs.
func processHooks(getenv func(string) string) replicate.Hooks {
	if spec := getenv(killAtEnv); spec != "" {
		return killAtStep(spec)
	}
	path := getenv(killArmEnv)
	if path == "" {
		return replicate.Hooks{}
	}
	var mu sync.Mutex
	var armed string // the file's content the count is for
	var seen int64
	at := func(step string) {
		data, err := os.ReadFile(path)
		if err != nil {
			return // not armed
		}
		spec := strings.TrimSpace(string(data))
		want, count, _ := strings.Cut(spec, ":")
		count, action, _ := strings.Cut(count, ":")
		n, err := strconv.ParseInt(count, 10, 64)
		if err != nil || (action != "" && action != "stop") {
			fmt.Fprintf(os.Stderr, "%s: %q: want STEP:N or STEP:N:stop\n", path, spec)
			os.Exit(2)
		}
		mu.Lock()
		defer mu.Unlock()
		if spec != armed {
			armed, seen = spec, 0
		}
		if step == want {
			if seen++; seen == n {
				if action == "stop" {
					stopHere() // returns once continued
					return
				}
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way: nothing more may happen
			}
		}
	}
	return replicate.Hooks{
		Commit:    func(s replicate.CommitStep, _ int, _, _ int64) error { at(string(s)); return nil },
		Statement: func() { at("statement") },
	}
}

// stopHere stops the process (SIGSTOP) before the caller goes on. The signal goes to the calling
// thread: sent to the process, another thread could take it while this one ran on for a while.
func stopHere() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
}

// start runs the stream's rekey process, with its kill point disarmed (killArmEnv).
func (s *e2eStream) start(t *testing.T) {
	t.Helper()
	s.rekeyProc.start(t, killArmEnv+"="+s.armPath)
}

// arm writes spec (STEP:N, STEP:N:stop) to the killArmEnv file at path, whole at once.
func arm(t *testing.T, path, spec string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// killAt arms the running process's kill point (killArmEnv) and waits for it to die there;
// when it has nothing left to apply (the topic fully applied), it is SIGKILLed at once.
func (s *e2eStream) killAt(t *testing.T, at string, caughtUp func(*e2eStream) bool) {
	t.Helper()
	arm(t, s.armPath, at)
	polls := 0
	idle := false
	wait.For(t, func() bool {
		if !s.alive() {
			return true
		}
		// the offsets are read from the broker now and then, not at every poll
		if polls++; polls%10 == 0 && caughtUp(s) {
			idle = true
			return true
		}
		return false
	}, fmt.Sprintf("%s to reach its kill point %s after start %d", s.name, at, s.starts))
	if err := os.Remove(s.armPath); err != nil {
		t.Fatal(err)
	}
	if idle {
		// disarmed: it dies of this SIGKILL, or of its own just before it
		s.proc.Process.Signal(syscall.SIGKILL)
		s.idleKills++
		at = "idle"
	}
	s.killPoints = append(s.killPoints, at)
	s.waitKilled(t)
}

// history lists the last messages of key k (pk1/orderid), to tell what a wrong row comes from.
func (s *e2eStream) history(k string) string {
	var out []string
	for _, m := range s.msgs {
		var kk struct {
			User string `json:"userid"`
			ID   int    `json:"orderid"`
		}
		if json.Unmarshal(m.Key, &kk) == nil && (&e2eRow{user: kk.User, id: kk.ID}).key() == k {
			v := string(m.Value)
			if m.Value == nil {
				v = "null"
			}
			out = append(out, fmt.Sprintf("  %d/%d: %.160s", m.Partition, m.Offset, v))
		}
	}
	return strings.Join(out[max(0, len(out)-6):], "\n")
}

// checkTable checks that the table holds the latest event of every key and no deleted key, and
// returns it.
func (s *e2eStream) checkTable(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	got := e2eTableState(t, db, s.table)
	if len(got) != len(s.want) {
		t.Errorf("%s: %d rows in the table, want %d", s.name, len(got), len(s.want))
	}
	bad := 0
	for k, v := range s.want {
		if got[k] != v && bad < 10 {
			bad++
			t.Errorf("%s: key %s: %q, want %q (its latest event); its last messages:\n%s", s.name, k, got[k], v, s.history(k))
		}
	}
	for k, v := range got {
		if _, ok := s.want[k]; !ok && bad < 10 {
			bad++
			t.Errorf("%s: key %s is in the table (%q), its latest event deletes it; its last messages:\n%s", s.name, k, v, s.history(k))
		}
	}
	return got
}

// checkRejects: each bad message is in the rejects of the state folders, once in each folder
// that holds it (replays of its batch replace the batch's rejects file), with the stage that
// refused it, and nothing else is. A message is in the folder of every member that applied its
// batch: of one member when none was killed before committing its offset.
func (s *e2eStream) checkRejects(t *testing.T, states ...string) {
	t.Helper()
	seen := map[[2]int64]int{}
	for _, state := range states {
		files, _ := filepath.Glob(filepath.Join(state, "rejects", "*.jsonl"))
		inFolder := map[[2]int64]int{}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var rj output.Reject
				if err := json.Unmarshal([]byte(line), &rj); err != nil || rj.LogPosition == nil {
					t.Errorf("%s: %s: reject line %q: %v", s.name, f, line, err)
					continue
				}
				at := [2]int64{int64(rj.Partition), rj.Offset}
				inFolder[at]++
				seen[at]++
				if stage, ok := s.poison[at]; !ok {
					t.Errorf("%s: message %v rejected, it is good: %s", s.name, at, line)
				} else if rj.Stage != stage {
					t.Errorf("%s: message %v rejected by stage %q, want %q: %s", s.name, at, rj.Stage, stage, line)
				}
			}
		}
		for at, n := range inFolder {
			if n != 1 {
				t.Errorf("%s: bad message %v is %d times in the rejects of %s (%d files), want once", s.name, at, n, state, len(files))
			}
		}
	}
	for at := range s.poison {
		if seen[at] == 0 || len(states) == 1 && seen[at] != 1 {
			t.Errorf("%s: bad message %v is %d times in the rejects, want once", s.name, at, seen[at])
		}
	}
}

// restartMariaDB kills MariaDB while the processes replicate, SIGKILLs victim and starts it again
// while MariaDB is down (a replicate restarted together with its target), starts MariaDB again
// once the others have retried a statement against it, and checks that every process rode
// through it (transient errors are retried with backoff, not the end of the run) and applies
// messages again. down runs once MariaDB is down (it releases the messages held for the outage).
func restartMariaDB(t *testing.T, srv *mysqltest.Server, streams []*e2eStream, victim *e2eStream, caughtUp func(*e2eStream) bool, down func()) {
	t.Helper()
	for _, s := range streams {
		s.waitApplying(t, caughtUp)
	}
	retries := func() (n float64) {
		for _, s := range streams {
			s.checkAlive(t)
			if s != victim {
				v, _ := s.metric("rekey_sql_retries_total")
				n += v
			}
		}
		return n
	}
	before := retries()
	srv.Kill()
	downAt := time.Now()
	down()
	victim.kill(t)
	victim.start(t)
	// a statement of the others retried against the stopped server, or (checked below) none
	wait.Until(func() bool { return retries() != before }, 10*time.Second)
	// MariaDB stays down until the victim failed to connect a few times
	wait.For(t, func() bool {
		victim.checkAlive(t)
		return strings.Count(victim.logSinceStart(), "cannot connect to the server yet, retrying") >= 2
	}, victim.name+" to fail to connect to the stopped MariaDB twice")
	after := retries()
	srv.Start(t)
	t.Logf("MariaDB down for %s: %.0f statements retried meanwhile; %s restarted meanwhile", time.Since(downAt).Round(time.Millisecond), after-before, victim.name)
	if after == before {
		t.Errorf("no statement retried while MariaDB was down: rekey_sql_retries_total stayed %.0f", before)
	}
	// all apply messages again, through the same processes (or have nothing left to apply)
	victim.waitApplying(t, caughtUp)
	for _, s := range streams {
		if s == victim {
			continue
		}
		n0, _ := s.metric("rekey_messages_in_total")
		wait.For(t, func() bool {
			s.checkAlive(t)
			n, ok := s.metric("rekey_messages_in_total")
			return (ok && n > n0) || caughtUp(s)
		}, s.name+" to apply messages after MariaDB came back")
	}
}

// e2eTableState is the table as pk1/orderid -> "status|amount|ts".
func e2eTableState(t *testing.T, db *sql.DB, table string) map[string]string {
	t.Helper()
	rows, err := db.Query("SELECT pk1, orderid, status, amount, ts FROM " + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var pk1 string
		var id int64
		var status, amount, ts sql.NullString
		if err := rows.Scan(&pk1, &id, &status, &amount, &ts); err != nil {
			t.Fatal(err)
		}
		v := ""
		for i, c := range []sql.NullString{status, amount, ts} {
			if i > 0 {
				v += "|"
			}
			if c.Valid {
				v += c.String
			} else {
				v += "NULL"
			}
		}
		got[pk1+"/"+strconv.FormatInt(id, 10)] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

package replicate_test

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"
	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap/zaptest"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
	"github.com/rekey/rekey/transform"
)

// The test table: orders keyed by [md5(userid).substr(0,4) + userid AS pk1][orderid], 4 regions
// split on the hex prefix. The source's primary key is orderid (Debezium's message key), so an
// update that changes userid moves the row to a new target key.
const mappingYAML = `version: 1
source:
  name: shop.orders
  columns:
    userid: text
    orderid: bigint
    amount: bigint
    note: text
target:
  table: orders
  primary_key: "[md5(userid).substr(0,4) + userid AS pk1][orderid]"
regions:
  count: 4
`

func program(t testing.TB) *transform.Program {
	t.Helper()
	m, err := transform.Decode([]byte(mappingYAML), "orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func plan(t testing.TB, p *transform.Program) pipeline.RegionPlan {
	t.Helper()
	pl, err := p.PlanRegions(transform.RegionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// pk1 is the expected first key column, computed independently of the transform.
func pk1(userid string) string {
	sum := md5.Sum([]byte(userid))
	return hex.EncodeToString(sum[:])[:4] + userid
}

// row is the content of a target row: the columns besides the key.
type row struct {
	userid string
	amount int64
	note   string
}

func (r row) String() string { return fmt.Sprintf("%s|%d|%s", r.userid, r.amount, r.note) }

type tkey struct {
	pk1     string
	orderid int64
}

// model is the expected table: the result of applying the messages in partition order.
type model map[tkey]row

func (m model) upsert(r row, orderid int64) { m[tkey{pk1(r.userid), orderid}] = r }
func (m model) delete(userid string, orderid int64) {
	delete(m, tkey{pk1(userid), orderid})
}

func config(t testing.TB, c *kafkatest.Cluster, topic, group, format, dir string) replicate.Config {
	t.Helper()
	p := program(t)
	kc, err := kafka.ParseURI(fmt.Sprintf("kafka://%s/%s?group=%s&format=%s", strings.Join(c.Brokers, ","), topic, group, format), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	return replicate.Config{
		Kafka:        kc,
		Program:      p,
		Plan:         plan(t, p),
		Format:       parquet.New(),
		Store:        sinktest.Folder(t, dir),
		Out:          dir,
		RollSize:     64 << 20,
		RollInterval: 300 * time.Millisecond,
		Memory:       16 << 20,
		Group: replicate.GroupOptions{
			SessionTimeout:    sessionTimeout(),
			HeartbeatInterval: 100 * time.Millisecond,
			RebalanceTimeout:  10 * time.Second,
			JoinBackoff:       100 * time.Millisecond,
		},
		Logger: zaptest.NewLogger(t).Named(filepath.Base(dir)),
	}
}

// sessionTimeout is short with kfake (GroupMinSessionTimeout), 6s (Kafka's minimum) for real brokers.
func sessionTimeout() time.Duration {
	if kafkatest.Real() {
		return 6 * time.Second
	}
	return 3 * time.Second
}

// running is a replicator running in the background.
type running struct {
	r    *replicate.Replicator
	stop chan struct{}
	done chan error
}

func start(t testing.TB, cfg replicate.Config) *running {
	t.Helper()
	r, err := replicate.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rn := &running{r: r, stop: make(chan struct{}), done: make(chan error, 1)}
	go func() { rn.done <- r.Run(context.Background(), rn.stop) }()
	return rn
}

// shutdown stops gracefully and returns Run's error.
func (rn *running) shutdown(t testing.TB) error {
	t.Helper()
	close(rn.stop)
	select {
	case err := <-rn.done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("replicator did not stop")
		return nil
	}
}

// waitCommitted waits until the group committed every partition's end offset.
func waitCommitted(t testing.TB, c *kafkatest.Cluster, group, topic string, ends map[int]int64, timeout time.Duration) {
	t.Helper()
	var got map[int]int64
	reached := func() bool {
		got = c.Committed(t, group, topic, len(ends))
		for p, e := range ends {
			if got[p] < e {
				return false
			}
		}
		return true
	}
	if !wait.Until(reached, timeout) {
		t.Fatalf("committed offsets %v, want %v", got, ends)
	}
}

func endOffsets(t testing.TB, c *kafkatest.Cluster, topic string) map[int]int64 {
	t.Helper()
	cfg := kafka.Config{Brokers: c.Brokers, Topic: topic}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	offs, err := cfg.Offsets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int64{}
	for _, o := range offs {
		out[o.Partition] = o.End
	}
	return out
}

func readManifest(t testing.TB, dir string) *replicate.Manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, output.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var m replicate.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

type dirSegment struct {
	dir string
	replicate.SegmentEntry
}

// applyOutputs computes the table that loading the directories' segments gives: per region and
// partition, in offset order, each segment's data file (read with parquet-go, an independent
// reader) and then its DELETE statements.
func applyOutputs(t testing.TB, schema pipeline.TargetSchema, pl pipeline.RegionPlan, dirs ...string) model {
	t.Helper()
	var segs []dirSegment
	for _, d := range dirs {
		m := readManifest(t, d)
		for _, s := range m.Replication.Segments {
			segs = append(segs, dirSegment{d, s})
		}
		checkDisk(t, d, m)
	}
	slices.SortStableFunc(segs, func(a, b dirSegment) int { return replicate.CompareSegments(a.SegmentEntry, b.SegmentEntry) })
	state := model{}
	for _, s := range segs {
		if s.Data != nil {
			rows := readParquet(t, filepath.Join(s.dir, s.Data.Path), schema)
			if int64(len(rows)) != s.Data.Rows {
				t.Fatalf("%s: %d rows, manifest says %d", s.Data.Path, len(rows), s.Data.Rows)
			}
			for _, v := range rows {
				if r := pl.Route(v[0]); r != s.Region {
					t.Fatalf("%s (region %d) holds a row of region %d", s.Data.Path, s.Region, r)
				}
				k := tkey{v[0].Str, v[1].Num}
				r := row{userid: v[2].Str, amount: v[3].Num, note: v[4].Str}
				if k.pk1 != pk1(r.userid) {
					t.Fatalf("%s: key %s for userid %s", s.Data.Path, k.pk1, r.userid)
				}
				state[k] = r
			}
		}
		if s.Deletes != nil {
			for _, k := range readDeletes(t, filepath.Join(s.dir, s.Deletes.Path)) {
				if r := pl.Route(pipeline.Text(k.pk1)); r != s.Region {
					t.Fatalf("%s (region %d) deletes a key of region %d", s.Deletes.Path, s.Region, r)
				}
				delete(state, k)
			}
		}
	}
	return state
}

// manifestFiles is the set of the files m lists: data, deletes and rejects.
func manifestFiles(m *replicate.Manifest) map[string]bool {
	listed := map[string]bool{}
	for _, s := range m.Replication.Segments {
		if s.Data != nil {
			listed[s.Data.Path] = true
		}
		if s.Deletes != nil {
			listed[s.Deletes.Path] = true
		}
	}
	for _, r := range m.Replication.Rejects {
		listed[r.Path] = true
	}
	return listed
}

// checkDisk: every committed file in the region and rejects folders is in the manifest, every
// file the manifest lists is there, and no temporary file is left.
func checkDisk(t testing.TB, dir string, m *replicate.Manifest) {
	t.Helper()
	listed := manifestFiles(m)
	for p := range listed {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("listed in the manifest: %v", err)
		}
	}
	ents, _ := filepath.Glob(filepath.Join(dir, "data", "region-*", "*"))
	for _, e := range ents {
		// the bulk load reads data/ whole; a .sql file there would be read as data
		if strings.HasSuffix(e, "."+output.RollDeletesExt) {
			t.Errorf("a delete file under data/: %s", e)
		}
	}
	more, _ := filepath.Glob(filepath.Join(dir, output.RejectsDir, "*"))
	ents = append(ents, more...)
	more, _ = filepath.Glob(filepath.Join(dir, output.DeletesDir, "region-*", "*"))
	ents = append(ents, more...)
	tops, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, e := range tops {
		if atomicfile.IsTemp(e) {
			t.Errorf("temporary file left: %s", filepath.Base(e))
		}
	}
	for _, e := range ents {
		rel, _ := filepath.Rel(dir, e)
		rel = filepath.ToSlash(rel)
		if atomicfile.IsTemp(e) {
			t.Errorf("temporary file left: %s", rel)
		} else if !listed[rel] {
			t.Errorf("file not in the manifest: %s", rel)
		}
	}
}

var deleteRE = regexp.MustCompile(`^DELETE FROM orders WHERE pk1 = '((?:[^']|'')*)' AND orderid = (-?\d+);$`)

func readDeletes(t testing.TB, path string) []tkey {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []tkey
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "--") || line == "" || line == "SET time_zone = '+00:00';" {
			continue
		}
		m := deleteRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s: unexpected statement %q", path, line)
		}
		id, _ := strconv.ParseInt(m[2], 10, 64)
		out = append(out, tkey{strings.ReplaceAll(m[1], "''", "'"), id})
	}
	return out
}

func readParquet(t testing.TB, path string, schema pipeline.TargetSchema) [][]pipeline.Value {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	st, _ := fh.Stat()
	f, err := pq.OpenFile(fh, st.Size())
	if err != nil {
		t.Fatalf("parquet-go: %s: %v", path, err)
	}
	idx := map[string]int{}
	for i, c := range schema.Columns {
		idx[c.Name] = i
	}
	var leaf []int
	for _, fld := range f.Schema().Fields() {
		j, ok := idx[fld.Name()]
		if !ok {
			t.Fatalf("%s: unexpected column %s", path, fld.Name())
		}
		leaf = append(leaf, j)
	}
	rd := pq.NewReader(f)
	defer rd.Close()
	var out [][]pipeline.Value
	buf := make([]pq.Row, 256)
	for {
		n, err := rd.ReadRows(buf)
		for _, r := range buf[:n] {
			vals := make([]pipeline.Value, len(schema.Columns))
			for _, pv := range r {
				j := leaf[pv.Column()]
				switch {
				case pv.IsNull():
				case schema.Columns[j].Type == pipeline.TypeBigint:
					vals[j] = pipeline.Int(pv.Int64())
				default:
					vals[j] = pipeline.Text(string(pv.ByteArray()))
				}
			}
			out = append(out, vals)
		}
		if err != nil || n == 0 {
			break
		}
	}
	return out
}

func compareModels(t testing.TB, got, want model) {
	t.Helper()
	bad := 0
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			if bad++; bad <= 10 {
				t.Errorf("missing row %v = %v", k, w)
			}
		} else if g != w {
			if bad++; bad <= 10 {
				t.Errorf("row %v = %v, want %v", k, g, w)
			}
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			if bad++; bad <= 10 {
				t.Errorf("extra row %v = %v (a lost delete?)", k, g)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d differences (%d rows expected, %d found)", bad, len(want), len(got))
	}
}

// jsonStream builds a json-format stream over parts partitions: per partition n messages over a
// small key space, so that keys are updated, deleted by tombstones and re-created; every 13th
// message is poison. It returns the messages, the expected table and the poison offsets.
func jsonStream(parts, n int) ([]kafkago.Message, model, map[string]bool) {
	want := model{}
	poison := map[string]bool{}
	var msgs []kafkago.Message
	for p := 0; p < parts; p++ {
		for i := 0; i < n; i++ {
			k := (i * 7) % 40 // 40 keys per partition
			userid := fmt.Sprintf("u%d-%d", p, k)
			orderid := int64(k % 3)
			key := fmt.Sprintf(`{"userid":%q,"orderid":%d}`, userid, orderid)
			m := kafkago.Message{Partition: p, Key: []byte(key)}
			switch {
			case i%13 == 12:
				m.Value = []byte(`{"userid":` + strconv.Itoa(i)) // bad JSON
				poison[fmt.Sprintf("%d/%d", p, i)] = true
			case i%17 == 16:
				m.Value = []byte(fmt.Sprintf(`{"userid":%q,"orderid":"not a number"}`, userid))
				poison[fmt.Sprintf("%d/%d", p, i)] = true
			case i%5 == 4:
				want.delete(userid, orderid) // a tombstone
			default:
				r := row{userid: userid, amount: int64(i), note: "n" + strconv.Itoa(i)}
				m.Value = []byte(fmt.Sprintf(`{"userid":%q,"orderid":%d,"amount":%d,"note":%q}`, userid, orderid, r.amount, r.note))
				want.upsert(r, orderid)
			}
			msgs = append(msgs, m)
		}
	}
	return msgs, want, poison
}

// rejectsOf reads the rejects files as a set of "partition/offset".
func rejectsOf(t testing.TB, dirs ...string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for k := range rejectLines(t, dirs...) {
		out[k] = true
	}
	return out
}

// rejectLines counts the reject lines of each message ("partition/offset") in the rolls'
// rejects files.
func rejectLines(t testing.TB, dirs ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, output.RejectsDir, "*.jsonl"))
		for _, name := range files {
			if atomicfile.IsTemp(name) {
				continue
			}
			st, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v, want 0600 (raw messages may be personal data)", name, st.Mode().Perm())
			}
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var r output.Reject
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatal(err)
				}
				if r.LogPosition == nil || r.Topic == "" || r.Position == "" || r.Code == "" {
					t.Fatalf("reject without coordinates: %s", sc.Text())
				}
				out[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++
			}
			f.Close()
		}
	}
	return out
}

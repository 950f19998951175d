package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
	"github.com/rekey/rekey/source/gen"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// Config is one campaign.
type Config struct {
	Rekey         string   // the rekey binary under test
	Sources       []string // "file", "cassandra"
	Kills         int      // kill points per source
	Rows          int      // good rows of the CSV file
	CassandraRows int      // good rows of shop.orders
	// BadRows are planted in each source, spread evenly, each of a kind the mapping rejects and
	// about 1 KB long: enough that rejects.jsonl's buffer is flushed between checkpoints, so that
	// kills leave reject lines a resume must drop.
	BadRows int
	Seed    uint64
	Work    string // scratch directory: inputs and outputs
	// Interval is --checkpoint-interval and MaxFileSize --max-file-size of every run: short and
	// small, so that a run commits many files in many checkpoints and most kills land mid-commit
	// or between two.
	Interval    time.Duration
	MaxFileSize string
	// CleanRuns is how many clean runs are made (default 2): they must give the same output, and
	// the longest one's duration spreads the kill points.
	CleanRuns int
	// MaxResumeKills bounds the resumes of one kill point that are killed too (0 to 2, at random).
	MaxResumeKills int
	// Store is where the runs write: "" for local folders, "versitygw" for prefixes of a bucket
	// on a versitygw the campaign starts (its posix backend keeps each object as a file, so
	// kills are aimed and outputs read as for a folder, and the bucket is also checked through
	// the S3 API: no stray objects, no unfinished multipart uploads).
	Store string
	Out   io.Writer // one line per run, then the summary
}

// Summary is one source's outcome.
type Summary struct {
	Source  string
	Runs    int
	Matched int
	Kills   int            // SIGKILLs sent (first runs and resumes) that hit a running process
	Phases  map[string]int // where the kills of first runs landed
	Failed  []string       // one line per run that did not match
	Clean   time.Duration  // the clean run's duration
}

// campaignMapping is mappings/orders.yaml with unknown channels rejected (on_missing_code:
// reject), so that the planted rows exercise rejects.jsonl across kills; "web" is a channel of
// the Cassandra table (cassandratest.SeedOrders).
const campaignMapping = `version: 1
source:
  name: shop.orders
  columns: {userid: text, orderid: bigint, channel: text, ts: timestamp, status: text, location: text, amount: decimal}
target:
  table: orders
  primary_key: "[md5(userid).substr(0,4) + userid AS pk1][orderid]"
  columns:
    channel: code(channel, channels)
    amount: "amount :: DECIMAL(18,2)"
  exclude: [userid]
  codes:
    channels: {taobao: tb, alipay: ap, wechat: wx, jd: jd, pdd: pd, web: wb}
  on_missing_code: reject
regions:
  count: 16
`

// source is one input of the campaign, ready to be migrated.
type source struct {
	name  string
	uri   string
	rows  int64 // rows the source holds, bad ones included
	bad   int64 // rows the mapping rejects
	close func()
}

// Run runs the campaign over every source of cfg and prints one line per run and a summary.
func Run(cfg Config) ([]Summary, error) {
	cfg = withDefaults(cfg)
	mapping, err := writeMapping(cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Out, "fault campaign: seed %d, %d kills per source, --checkpoint-interval %v, --max-file-size %s, work %s\n",
		cfg.Seed, cfg.Kills, cfg.Interval, cfg.MaxFileSize, cfg.Work)
	var sums []Summary
	srv, err := startStore(cfg)
	if err != nil {
		return nil, err
	}
	if srv != nil {
		defer srv.Stop()
	}
	for _, name := range cfg.Sources {
		src, err := openSource(cfg, name, srv)
		if err != nil {
			return sums, fmt.Errorf("%s: prepare the input: %w", name, err)
		}
		sum, err := newCampaign(cfg, src, mapping, srv).run()
		src.close()
		if err != nil {
			return sums, fmt.Errorf("%s: %w", name, err)
		}
		sums = append(sums, sum)
	}
	var parts []string
	for i, s := range sums {
		if i == 0 {
			parts = append(parts, fmt.Sprintf("%s: %d/%d runs matched the clean run's rows", s.Source, s.Matched, s.Runs))
		} else {
			parts = append(parts, fmt.Sprintf("%s: %d/%d", s.Source, s.Matched, s.Runs))
		}
	}
	fmt.Fprintln(cfg.Out, strings.Join(parts, "; "))
	return sums, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.MaxFileSize == "" {
		cfg.MaxFileSize = "256KiB"
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 200 * time.Millisecond
	}
	return cfg
}

// writeMapping writes the campaign's mapping into the scratch folder.
func writeMapping(cfg Config) (string, error) {
	mapping := filepath.Join(cfg.Work, "orders.yaml")
	return mapping, os.WriteFile(mapping, []byte(campaignMapping), 0o644)
}

// startStore starts the object store the runs write to; nil for local folders.
func startStore(cfg Config) (*s3test.Server, error) {
	switch cfg.Store {
	case "":
		return nil, nil
	case "versitygw":
		srv, err := s3test.NewVersitygw(filepath.Join(cfg.Work, "versitygw"))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(cfg.Out, "writing to versitygw at %s (bucket %s, folder %s)\n", srv.Endpoint, s3test.Bucket, srv.Dir)
		return srv, nil
	}
	return nil, fmt.Errorf("store %q: want versitygw, or none for local folders", cfg.Store)
}

func openSource(cfg Config, name string, srv *s3test.Server) (*source, error) {
	switch name {
	case "file":
		return fileSource(cfg.Work, cfg.Rows, cfg.BadRows, cfg.Seed)
	case "export":
		return exportSource(cfg, srv)
	case "cassandra":
		return cassandraSource(cfg.CassandraRows, cfg.BadRows)
	}
	return nil, fmt.Errorf("unknown source %q: want file or cassandra", name)
}

func newCampaign(cfg Config, src *source, mapping string, srv *s3test.Server) *campaign {
	c := &campaign{cfg: cfg, src: src, mapping: mapping, label: src.name,
		dir: filepath.Join(cfg.Work, src.name), rng: rand.New(rand.NewPCG(cfg.Seed, uint64(len(src.name))))} // -sources cassandra draws the same points
	if srv != nil {
		c.srv, c.label = srv, src.name+" on versitygw"
		c.dir = filepath.Join(srv.Dir, s3test.Bucket, src.name) // the prefix's folder
	}
	return c
}

// prepare is Run's setup for one source: the campaign, and what undoes it.
func prepare(cfg Config, name string) (*campaign, func(), error) {
	cfg = withDefaults(cfg)
	mapping, err := writeMapping(cfg)
	if err != nil {
		return nil, nil, err
	}
	srv, err := startStore(cfg)
	if err != nil {
		return nil, nil, err
	}
	src, err := openSource(cfg, name, srv)
	if err != nil {
		if srv != nil {
			srv.Stop()
		}
		return nil, nil, fmt.Errorf("%s: prepare the input: %w", name, err)
	}
	return newCampaign(cfg, src, mapping, srv), func() {
		src.close()
		if srv != nil {
			srv.Stop()
		}
	}, nil
}

// fileSource writes orders.csv: rows of `rekey gen orders` with bad rows planted at even
// intervals, each of a kind the run must reject (so rejects are spread over many batches and
// checkpoints).
func fileSource(dir string, rows, bad int, seed uint64) (*source, error) {
	var buf bytes.Buffer
	if err := gen.WriteCSV(&buf, "orders", int64(rows), int64(seed%1000+1)); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "orders.csv")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	every := rows/(bad+1) + 1
	planted, line := 0, 0
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		w.Write(sc.Bytes())
		w.WriteByte('\n')
		if line > 0 && line%every == 0 && planted < bad {
			w.WriteString(badCSVRow(planted))
			planted++
		}
		line++
	}
	for ; planted < bad; planted++ {
		w.WriteString(badCSVRow(planted))
	}
	if err := errors.Join(sc.Err(), w.Flush(), f.Close()); err != nil {
		return nil, err
	}
	return &source{name: "file", uri: "file:" + path, rows: int64(rows + bad), bad: int64(bad), close: func() {}}, nil
}

// exportFiles is how many files exportSource writes: more than the Job's completions, of unequal
// sizes, as an export's files are.
const exportFiles = 12

// exportSource is fileSource's rows split into exportFiles CSV files of unequal sizes, each with
// the header, as an export of a table is: in the folder exports/, or with srv in the bucket's
// prefix exports/ (read through s3://).
func exportSource(cfg Config, srv *s3test.Server) (*source, error) {
	tmp := filepath.Join(cfg.Work, "export-whole")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	whole, err := fileSource(tmp, cfg.Rows, cfg.BadRows, cfg.Seed)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(tmp, "orders.csv"))
	if err != nil {
		return nil, err
	}
	header, body, _ := bytes.Cut(data, []byte("\n"))
	lines := bytes.SplitAfter(body, []byte("\n"))
	dir := filepath.Join(cfg.Work, "exports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var bucket *s3store.Store
	if srv != nil {
		if bucket, err = s3store.Open(context.Background(), srv.URIFor("exports"), s3test.Getenv(srv.Env)); err != nil {
			return nil, err
		}
	}
	// file k holds a share proportional to k+1: the shards balance them by size
	weights := exportFiles * (exportFiles + 1) / 2
	at := 0
	for k := range exportFiles {
		n := len(lines) * (k + 1) / weights
		if k == exportFiles-1 {
			n = len(lines) - at
		}
		part := append(append(append([]byte{}, header...), '\n'), bytes.Join(lines[at:at+n], nil)...)
		at += n
		name := fmt.Sprintf("part-%02d.csv", k)
		if bucket != nil {
			err = bucket.Put(context.Background(), name, part)
		} else {
			err = os.WriteFile(filepath.Join(dir, name), part, 0o644)
		}
		if err != nil {
			return nil, err
		}
	}
	uri := "file:" + dir
	if srv != nil {
		base, query, _ := strings.Cut(srv.URIFor("exports"), "?")
		uri = base + "/*.csv?" + query
	}
	return &source{name: "export", uri: uri, rows: whole.rows, bad: whole.bad, close: func() {}}, nil
}

// badCSVRow is the i-th planted bad line: a type error, an unknown channel, a key over 2 KB, a
// short line, a bad timestamp.
func badCSVRow(i int) string {
	id := 9_000_000_000 + i
	switch i % 5 {
	case 0:
		return fmt.Sprintf("bad%d,notanumber,taobao,1704067200000,PAID,%s,1.00\n", i, padding)
	case 1:
		return fmt.Sprintf("bad%d,%d,fax,1704067200000,PAID,%s,1.00\n", i, id, padding)
	case 2:
		return fmt.Sprintf("%s%d,%d,taobao,1704067200000,PAID,Hangzhou,1.00\n", strings.Repeat("u", 2100), i, id)
	case 3:
		return fmt.Sprintf("bad%d%s,%d\n", i, padding, id)
	default:
		return fmt.Sprintf("bad%d,%d,taobao,yesterday,PAID,%s,1.00\n", i, id, padding)
	}
}

// padding makes a bad row's reject line about 1 KB long.
var padding = strings.Repeat("Hangzhou-", 110)

// cassandraSource starts the CQL test server in this process (rekey connects to it over
// loopback) with shop.orders seeded, plus bad rows: unknown channels and keys over 2 KB.
func cassandraSource(rows, bad int) (*source, error) {
	srv, err := cqltest.New(cqltest.WithNodes(3), cqltest.WithVnodes(4))
	if err != nil {
		return nil, err
	}
	if err := cassandratest.SeedOrders(srv, rows); err != nil {
		srv.Close()
		return nil, err
	}
	if err := srv.InsertMany("shop", "orders", bad, func(i int, r map[string]any) error {
		r["userid"] = "bad" + strconv.Itoa(i)
		if i%2 == 1 {
			r["userid"] = strings.Repeat("u", 2100) + strconv.Itoa(i)
		}
		r["orderid"] = int64(9_000_000_000 + i)
		r["channel"] = "fax"
		if i%2 == 1 {
			r["channel"] = "taobao"
		}
		r["ts"] = int64(1704067200000)
		r["location"] = padding
		return nil
	}); err != nil {
		srv.Close()
		return nil, err
	}
	srv.Rows("shop", "orders") // sorts the rows now, before any run is timed
	var hosts []string
	for _, h := range srv.Hosts() {
		hosts = append(hosts, fmt.Sprintf("%s:%d", h, srv.Port()))
	}
	// small pages: many cursors per range, so kills land between pages of a range
	uri := "cassandra://" + strings.Join(hosts, ",") + "/shop/orders?page_size=500&splits=48"
	return &source{name: "cassandra", uri: uri, rows: int64(rows + bad), bad: int64(bad), close: func() { srv.Close() }}, nil
}

// campaign is the kill points of one source.
type campaign struct {
	cfg     Config
	src     *source
	label   string // the source, and the store when not local folders
	mapping string
	dir     string
	srv     *s3test.Server // the object store the runs write to; nil for local folders
	rng     *rand.Rand
	clean   time.Duration
	ref     *runOutput
}

// outArg is the --out of the run whose output is the folder out: out itself, or on an object
// store the URI of the prefix that folder holds.
func (c *campaign) outArg(out string) string {
	if c.srv == nil {
		return out
	}
	rel, _ := filepath.Rel(filepath.Join(c.srv.Dir, s3test.Bucket), out)
	return c.srv.URIFor(filepath.ToSlash(rel))
}

// read reads back a finished run (on an object store, also through the S3 API).
func (c *campaign) read(out string) (*runOutput, error) {
	if c.srv == nil {
		return readOutput(out)
	}
	st, err := s3store.Open(context.Background(), c.outArg(out), s3test.Getenv(c.srv.Env))
	if err != nil {
		return nil, err
	}
	return readOutputFrom(out, st)
}

func (c *campaign) args(out string, resume bool) []string {
	// the planted bad rows are more than the default reject limit allows
	a := []string{"migrate", "-m", c.mapping, "--source", c.src.uri, "--out", c.outArg(out), "--progress", "never",
		"--checkpoint-interval", c.cfg.Interval.String(), "--max-file-size", c.cfg.MaxFileSize, "--max-rejects", "-1"}
	if resume {
		a = append(a, "--resume")
	}
	return a
}

func (c *campaign) run() (Summary, error) {
	sum := Summary{Source: c.label, Phases: map[string]int{}}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return sum, err
	}
	// The clean runs: the reference rows, which must not depend on the run, and the duration the
	// kill points are spread over: the longest one, since a kill point found to be past the end
	// of a run is aimed again at the same fraction of that run, while one that is too early is not.
	var ref *runOutput
	for i := 1; i <= max(1, c.cfg.CleanRuns); i++ {
		cleanOut := filepath.Join(c.dir, fmt.Sprintf("clean-%d", i))
		os.RemoveAll(cleanOut)
		res := c.start(cleanOut, false).wait(kill{}, c.timeout())
		if res.err != nil {
			return sum, fmt.Errorf("clean run: %w", res.err)
		}
		got, err := c.read(cleanOut)
		if err != nil {
			return sum, fmt.Errorf("clean run: %w", err)
		}
		if i == 1 {
			ref, c.clean = got, res.elapsed
			continue
		}
		if diffs := compare(ref, got); len(diffs) > 0 {
			return sum, fmt.Errorf("two clean runs differ: %s", strings.Join(diffs, "; "))
		}
		c.clean = max(c.clean, res.elapsed)
		os.RemoveAll(cleanOut)
	}
	sum.Clean = c.clean
	// The clean run itself must account for every row: the good ones written, the planted ones rejected.
	m := ref.manifest
	if len(ref.problems) > 0 || m.RowsIn != c.src.rows || m.RowsRejected != c.src.bad || m.RowsWritten != c.src.rows-c.src.bad ||
		int64(len(ref.rows)) != m.RowsWritten || int64(len(ref.rejects)) != c.src.bad {
		return sum, fmt.Errorf("the clean run is wrong: manifest rows_in %d, rows_written %d, rows_rejected %d, %d rows read back, %d rejects, for %d rows of which %d bad; %s",
			m.RowsIn, m.RowsWritten, m.RowsRejected, len(ref.rows), len(ref.rejects), c.src.rows, c.src.bad, strings.Join(ref.problems, "; "))
	}
	c.ref = ref
	fmt.Fprintf(c.cfg.Out, "%s: clean run %.2fs (%s): %d rows in, %d written to %d files, %d rejected\n",
		c.label, c.clean.Seconds(), cleanRuns(c.cfg.CleanRuns), m.RowsIn, m.RowsWritten, m.Files, m.RowsRejected)

	for i, p := range c.points() {
		out := filepath.Join(c.dir, fmt.Sprintf("run-%02d", i+1))
		os.RemoveAll(out)
		line, ok, kills, phase := c.killAndResume(out, p)
		sum.Runs++
		sum.Kills += kills
		sum.Phases[phase]++
		if ok {
			sum.Matched++
			os.RemoveAll(out)
		} else {
			sum.Failed = append(sum.Failed, line)
			line += " (kept in " + out + ")"
		}
		fmt.Fprintf(c.cfg.Out, "%s #%02d %s\n", c.label, i+1, line)
	}
	var phases []string
	for _, ph := range phaseOrder {
		if n := sum.Phases[ph]; n > 0 {
			phases = append(phases, fmt.Sprintf("%d %s", n, ph))
		}
	}
	fmt.Fprintf(c.cfg.Out, "%s: %d/%d runs matched; %d kills; first kills landed: %s\n",
		c.label, sum.Matched, sum.Runs, sum.Kills, strings.Join(phases, ", "))
	return sum, nil
}

func cleanRuns(n int) string {
	if n <= 1 {
		return "1 run"
	}
	return fmt.Sprintf("the longest of %d identical runs", n)
}

// timeout is how long a run may take before it counts as hung.
func (c *campaign) timeout() time.Duration {
	return max(2*time.Minute, 20*c.clean)
}

// kill says when to SIGKILL a run: a delay from its start (after, or frac of the clean run's
// duration), or when the output reaches a state (the first checkpoint, the final checkpoint,
// ddl.sql), or a delay after a checkpoint holds rows rows (evLate). The zero kill lets the run end.
type kill struct {
	after time.Duration
	frac  float64 // of the clean run's duration (when after is 0)
	event string  // "", evLocked, evFirstCheckpoint, evFinalCheckpoint, evDDL, evLate
	rows  int64   // evLate
	pct   int     // evLate: rows as a percentage of the source's
}

// at resolves a fraction of the clean run's duration d.
func (k kill) at(d time.Duration) kill {
	if k.frac > 0 {
		k.after = time.Duration(k.frac * float64(d))
	}
	return k
}

const (
	evLocked          = "output locked"
	evFirstCheckpoint = "first checkpoint"
	evFinalCheckpoint = "final checkpoint"
	evDDL             = "ddl.sql written"
	evLate            = "late"
)

func (k kill) String() string {
	switch k.event {
	case "":
		if k.frac > 0 {
			return fmt.Sprintf("at %.3fs (%.0f%%)", k.after.Seconds(), 100*k.frac)
		}
		return fmt.Sprintf("at %.3fs", k.after.Seconds())
	case evLate:
		return fmt.Sprintf("%dms after a checkpoint holds %d%% of the rows", k.after.Milliseconds(), k.pct)
	}
	return "at " + k.event
}

// point is one run of the campaign: where the first run is killed, and where its resumes are.
type point struct {
	first   kill
	resumes []kill // the first len(resumes) resumes are killed too
}

// points draws the kill points over the clean run's duration d: a tenth inside the first 50 ms
// (process start, planning, the first checkpoint), a fifth in the rest of the first second, a
// fifth in the last 10% (the final commit, manifest.json), the rest anywhere in between. Four
// are triggered by the output's state instead of time: as soon as the output is locked (before
// the first checkpoint), right after the first checkpoint, right after the final checkpoint,
// right after ddl.sql; and half of the last 10% are up to 150 ms
// after a checkpoint holds 85 to 100% of the rows, since a busy machine makes a run's duration
// vary by more than 10%. Some resumes are killed as well. Points past the first second are
// fractions of the duration, which is updated when a run turns out faster than the clean one.
func (c *campaign) points() []point {
	k, d, r := c.cfg.Kills, c.clean, c.rng
	between := func(lo, hi time.Duration) kill {
		if hi <= lo {
			hi = lo + time.Millisecond
		}
		return kill{after: lo + time.Duration(r.Int64N(int64(hi-lo)))}
	}
	fraction := func(lo, hi float64) kill { return kill{frac: lo + (hi-lo)*r.Float64()} }
	var kills []kill
	events := []string{evFinalCheckpoint, evFirstCheckpoint, evDDL, evLocked}
	nEvents := min(len(events), max(1, k/5))
	if k < 3 {
		nEvents = 0
	}
	for _, e := range events[:nEvents] {
		kills = append(kills, kill{event: e})
	}
	second := min(time.Second, d*9/10)
	nEarly := max(1, k/10)
	nFirst := k / 5
	nLast := k / 5
	for i := 0; i < nEarly && len(kills) < k; i++ {
		kills = append(kills, between(time.Millisecond, 50*time.Millisecond))
	}
	for i := 0; i < nFirst && len(kills) < k; i++ {
		kills = append(kills, between(50*time.Millisecond, second))
	}
	for i := 0; i < nLast && len(kills) < k; i++ {
		if i%2 == 1 {
			pct := 85 + r.IntN(16)
			kills = append(kills, kill{event: evLate, pct: pct, rows: c.src.rows * int64(pct) / 100,
				after: time.Duration(r.Int64N(int64(150 * time.Millisecond)))})
			continue
		}
		kills = append(kills, fraction(0.9, 1.02))
	}
	for len(kills) < k {
		kills = append(kills, fraction(float64(second)/float64(d), 0.9))
	}
	sort.SliceStable(kills, func(i, j int) bool { // by time, then the events
		if (kills[i].event == "") != (kills[j].event == "") {
			return kills[i].event == ""
		}
		return kills[i].event == "" && kills[i].at(d).after < kills[j].at(d).after
	})
	pts := make([]point, len(kills))
	for i, kl := range kills {
		pts[i].first = kl
		// a third of the runs have their first resume killed too, a third of those the second
		for j := 0; j < c.cfg.MaxResumeKills && r.IntN(3) == 0; j++ {
			pts[i].resumes = append(pts[i].resumes, fraction(0.001, 1))
		}
	}
	return pts
}

// killAndResume runs one kill point: the first run killed as p says, then --resume until a run
// exits 0, then the comparison with the clean run. It returns the line to print, whether the
// output matched, the kills that hit a running process and where the first one landed.
func (c *campaign) killAndResume(out string, p point) (line string, ok bool, kills int, phase string) {
	var b strings.Builder
	var res result
	for try := 0; ; try++ {
		k := p.first.at(c.clean)
		fmt.Fprintf(&b, "kill %s", k)
		res = c.start(out, false).wait(k, c.timeout())
		if res.killed || res.err != nil || (k.frac == 0 && k.event != evLate) || try == 2 {
			break
		}
		// Faster than the clean run (the machine is shared): it was a clean run too, and the
		// latest measure of a run's duration. Kill the same fraction of it (or try the late kill
		// again).
		c.clean = res.elapsed
		fmt.Fprintf(&b, " (the run ended first, %.3fs); again: ", res.elapsed.Seconds())
		os.RemoveAll(out)
	}
	phase = res.phase
	if res.killed {
		kills++
		fmt.Fprintf(&b, " (sent at %.3fs: %s)", res.elapsed.Seconds(), res.where)
	} else if res.err == nil {
		fmt.Fprintf(&b, " (the run ended first, %.3fs)", res.elapsed.Seconds())
	}
	resumes := 0
	for res.killed {
		if resumes == 10 {
			return b.String() + ": MISMATCH: still not finished after 10 resumes", false, kills, phase
		}
		k := kill{}
		if resumes < len(p.resumes) {
			k = p.resumes[resumes].at(c.clean)
		}
		resumes++
		res = c.start(out, true).wait(k, c.timeout())
		if res.killed {
			kills++
			fmt.Fprintf(&b, "; resume %d killed %s (%s)", resumes, k, res.where)
		}
	}
	if res.err != nil {
		return fmt.Sprintf("%s; resumes %d: MISMATCH: %v", b.String(), resumes, res.err), false, kills, phase
	}
	fmt.Fprintf(&b, "; resumes %d", resumes)
	got, err := c.read(out)
	if err != nil {
		return fmt.Sprintf("%s: MISMATCH: %v", b.String(), err), false, kills, phase
	}
	if diffs := compare(c.ref, got); len(diffs) > 0 {
		return fmt.Sprintf("%s: MISMATCH: %s", b.String(), strings.Join(diffs, "; ")), false, kills, phase
	}
	return b.String() + ": matched", true, kills, phase
}

// attempt is one rekey process.
type attempt struct {
	cmd     *exec.Cmd
	out     string // its output folder (on an object store, the prefix's folder in versitygw's)
	started time.Time
	done    chan error
	stderr  *bytes.Buffer
	err     error
}

// start starts rekey migrate into the folder out (or the prefix it holds).
func (c *campaign) start(out string, resume bool) *attempt {
	return c.startArgs(c.args(out, resume), out)
}

// startArgs starts rekey with args; out is the folder its output is in (watched for kill events).
func (c *campaign) startArgs(args []string, out string) *attempt {
	a := &attempt{cmd: exec.Command(c.cfg.Rekey, args...), out: out, done: make(chan error, 1), stderr: &bytes.Buffer{}}
	if c.srv != nil {
		a.cmd.Env = os.Environ()
		for k, v := range c.srv.Env { // credentials from the environment only, as for users
			a.cmd.Env = append(a.cmd.Env, k+"="+v)
		}
	}
	a.cmd.Stdout = io.Discard
	a.cmd.Stderr = a.stderr
	a.started = time.Now()
	if err := a.cmd.Start(); err != nil {
		a.err = err
		a.done <- err
		return a
	}
	go func() { a.done <- a.cmd.Wait() }()
	return a
}

// result is how an attempt ended.
type result struct {
	killed  bool          // by our SIGKILL; phase says where it landed
	hung    bool          // it outlived the timeout (err holds its goroutines)
	err     error         // it ended by itself with an error (exit code and the end of its stderr)
	elapsed time.Duration // from its start to the kill or its exit
	phase   string        // where the kill landed (phaseOf)
	where   string        // phase, with the checkpoint's figures
}

// wait lets the attempt run until k says to kill it, or until it ends. A run that outlives
// timeout is sent SIGQUIT (Go prints every goroutine's stack) and reported as hung.
func (a *attempt) wait(k kill, timeout time.Duration) result {
	if a.err != nil {
		return result{err: a.err}
	}
	var fire <-chan time.Time
	if k.event == "" && k.after > 0 {
		t := time.NewTimer(k.after - time.Since(a.started))
		defer t.Stop()
		fire = t.C
	}
	var poll <-chan time.Time
	if k.event != "" {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		poll = t.C
	}
	hang := time.NewTimer(timeout)
	defer hang.Stop()
	var w watcher
	for {
		select {
		case err := <-a.done:
			return a.ended(err)
		case <-fire:
			return a.kill()
		case <-poll:
			if !w.reached(a.out, k) {
				continue
			}
			if k.event != evLate || k.after == 0 {
				return a.kill()
			}
			poll = nil
			t := time.NewTimer(k.after)
			defer t.Stop()
			fire = t.C
		case <-hang.C:
			a.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-a.done:
			case <-time.After(10 * time.Second):
				a.cmd.Process.Kill()
				<-a.done
			}
			dump := a.stderr.String() // the main goroutine comes first
			if len(dump) > 8000 {
				dump = dump[:8000] + "..."
			}
			return result{elapsed: time.Since(a.started), hung: true, err: fmt.Errorf("hung: still running after %v; its goroutines:\n%s", timeout, dump)}
		}
	}
}

func (a *attempt) kill() result {
	el := time.Since(a.started) // when the signal is sent: reaping a big process takes a while
	a.cmd.Process.Signal(syscall.SIGKILL)
	err := <-a.done
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			ph, where := phaseOf(a.out)
			return result{killed: true, elapsed: el, phase: ph, where: where}
		}
	}
	// it ended on its own just before the kill
	r := a.ended(err)
	r.elapsed = el
	return r
}

func (a *attempt) ended(err error) result {
	r := result{elapsed: time.Since(a.started), phase: "after the run ended"}
	if completedWithRejects(err) {
		err = nil
	}
	if err != nil {
		r.err = fmt.Errorf("rekey %s: %v after %.2fs: %s", strings.Join(a.cmd.Args[1:], " "), err, r.elapsed.Seconds(), tail(a.stderr.String(), 1500))
	}
	return r
}

// completedWithRejects tells whether a rekey run's error is its exit code 1: the run completed,
// and some rows (the planted ones) were rejected.
func completedWithRejects(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 1
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}

// watcher polls an output directory for a kill event, reading checkpoint.json only when it changed.
type watcher struct {
	mod  time.Time
	size int64
}

func (w *watcher) reached(out string, k kill) bool {
	switch k.event {
	case evDDL, evLocked:
		name := "ddl.sql"
		if k.event == evLocked {
			name = output.LockFile
		}
		_, err := os.Stat(filepath.Join(out, name))
		return err == nil
	case evFirstCheckpoint, evFinalCheckpoint, evLate:
		path := filepath.Join(out, output.CheckpointFile)
		st, err := os.Stat(path)
		if err != nil {
			return false
		}
		if k.event == evFirstCheckpoint {
			return true
		}
		if st.ModTime() == w.mod && st.Size() == w.size {
			return false
		}
		w.mod, w.size = st.ModTime(), st.Size()
		cp, err := outputtest.Checkpoint(out)
		if err != nil || cp == nil {
			return false
		}
		if k.event == evLate {
			return cp.RowsIn >= k.rows
		}
		return cp.Complete
	}
	return false
}

// The places a kill can land, as the output shows them afterwards.
const (
	phStart     = "before any output"
	phLocked    = "output locked, nothing written"
	phNoCP      = "before the first checkpoint"
	phFirstCP   = "at the first checkpoint (no rows yet)"
	phMid       = "mid-run"
	phFinal     = "after the final checkpoint, before manifest.json"
	phManifest  = "after manifest.json"
	phEnded     = "after the run ended"
	phUnreadble = "checkpoint unreadable"
)

var phaseOrder = []string{phStart, phLocked, phNoCP, phFirstCP, phMid, phFinal, phManifest, phEnded, phUnreadble}

// phaseOf tells where a run was killed from what it left in out: the phase, and the phase
// with the last checkpoint's figures.
func phaseOf(out string) (phase, where string) {
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) == 0 {
		return phStart, phStart
	}
	if len(entries) == 1 && entries[0].Name() == output.LockFile {
		return phLocked, phLocked
	}
	cp, err := outputtest.Checkpoint(out)
	switch {
	case err != nil:
		return phUnreadble, phUnreadble + ": " + err.Error()
	case cp == nil:
		return phNoCP, phNoCP
	case cp.Complete:
		if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
			return phManifest, phManifest
		}
		return phFinal, phFinal
	case cp.RowsIn == 0:
		return phFirstCP, phFirstCP
	}
	return phMid, fmt.Sprintf("%s: checkpoint at %d rows, %d files", phMid, cp.RowsIn, len(cp.Files))
}

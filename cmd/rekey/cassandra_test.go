package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	pq "github.com/parquet-go/parquet-go"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
	"github.com/rekey/rekey/store"
)

// runCLI runs the rekey command line in-process, with nothing on stdin, and returns its exit
// code and what it printed. Runs share no streams, so tests may run them in parallel.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return cliRun{}.run(t, args...)
}

// runCLIWithStdin is runCLI with stdin read from in.
func runCLIWithStdin(t *testing.T, in io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return cliRun{stdin: in}.run(t, args...)
}

// runCLIWithEnv is runCLI with env's variables set over the process's, for this run only (unlike
// t.Setenv, it lets the test run in parallel).
func runCLIWithEnv(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return cliRun{env: env}.run(t, args...)
}

// cliRun is one in-process run of the command line and the seams a test sets on it.
type cliRun struct {
	stdin io.Reader         // nothing when nil
	env   map[string]string // set over the process's environment, for this run only
	// signals stand for Ctrl-C and SIGTERM (interrupt sends one); the process's own when nil
	signals chan os.Signal
	wrapOut func(store.Store) store.Store // wraps the store --out opens
	// stderr, when set, receives the run's stderr as it is written (a test may watch it)
	stderr *lockedBuffer
}

func (c cliRun) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	in := c.stdin
	if in == nil {
		in = strings.NewReader("")
	}
	getenv := os.Getenv
	if c.env != nil {
		getenv = func(k string) string {
			if v, ok := c.env[k]; ok {
				return v
			}
			return os.Getenv(k)
		}
	}
	var out lockedBuffer
	errs := c.stderr
	if errs == nil {
		errs = &lockedBuffer{}
	}
	inv := &invocation{stdin: in, stdout: &out, stderr: errs, getenv: getenv, signals: c.signals, wrapOut: c.wrapOut}
	code = inv.run(context.Background(), args)
	return code, out.String(), errs.String()
}

// lockedBuffer holds what a run prints: its logs and progress come from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	return mustRunWithEnv(t, nil, args...)
}

// mustRunWithEnv is mustRun with env's variables set over the process's, for this run only.
func mustRunWithEnv(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	code, out, errs := runCLIWithEnv(t, env, args...)
	if code != 0 {
		t.Fatalf("rekey %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// seedShop creates shop.orders with n rows: users of 3 orders each.
func seedShop(t *testing.T, c *cassandratest.Cluster, n int) {
	t.Helper()
	if err := c.CreateTable("shop", "orders", []cqltest.Column{
		{Name: "userid", Type: "text"}, {Name: "orderid", Type: "bigint"}, {Name: "channel", Type: "text"},
		{Name: "amount", Type: "double"}, {Name: "tags", Type: "set<text>"}, {Name: "note", Type: "text"},
	}, []string{"userid"}, []string{"orderid"}); err != nil {
		t.Fatal(err)
	}
	channels := []string{"taobao", "alipay", "wechat", "web"}
	if err := c.InsertMany("shop", "orders", n, func(i int, r map[string]any) error {
		r["userid"] = fmt.Sprintf("user%05d", i/3)
		r["orderid"] = int64(i)
		r["channel"] = channels[i%len(channels)]
		r["amount"] = float64(i) / 4
		if i%2 == 0 {
			r["tags"] = []string{"b", fmt.Sprint("t", i%5)}
		}
		if i%7 != 0 {
			r["note"] = fmt.Sprintf("note %d ✓", i)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

const hashMapping = `version: 1
source:
  name: shop.orders
target:
  table: orders
  primary_key: "[md5(userid).substr(0,4) + userid AS pk1][orderid]"
  columns:
    channel: code(channel, channels)
  codes:
    channels: {taobao: tb, alipay: ap, wechat: wx}
  on_missing_code: keep
regions:
  count: 8
`

// quantileMapping's first key column is the user itself: its split keys are quantiles of a
// sample of the table, which every shard must draw the same way.
const quantileMapping = `version: 1
source:
  name: shop.orders
target:
  table: orders_by_user
  primary_key: "[userid][orderid DESC]"
regions:
  count: 5
`

func TestCheckReadsTheSchema(t *testing.T) {
	c := cassandratest.Open(t)
	seedShop(t, c, 30)
	dir := t.TempDir()
	m := writeFile(t, dir, "m.yaml", hashMapping)
	out := mustRun(t, "check", "-m", m, "--source", c.URI("", "", "splits=8"))
	for _, want := range []string{"userid text", "tags set<text>", "note text", "pk1", "Region plan: 8 regions"} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	// a mapping that declares a column the table lacks, or with another type: exit 2, no data read
	bad := writeFile(t, dir, "bad.yaml", strings.Replace(hashMapping, "  name: shop.orders\n", "  name: shop.orders\n  columns:\n    userid: text\n    orderid: text\n    channel: text\n    amount: double\n    tags: set<text>\n    note: text\n", 1))
	outDir := filepath.Join(dir, "out")
	code, _, errs := runCLI(t, "migrate", "-m", bad, "--source", c.URI("shop", "orders", ""), "--out", outDir)
	if code != 2 || !strings.Contains(errs, "source.columns.orderid: declared as text but the source has bigint") {
		t.Errorf("wrong type: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(outDir); err == nil {
		t.Error("the failed migrate created its output directory")
	}
	missing := writeFile(t, dir, "missing.yaml", strings.Replace(hashMapping, "[orderid]", "[order_id]", 1))
	code, _, errs = runCLI(t, "check", "-m", missing, "--source", c.URI("shop", "orders", ""))
	if code != 2 || !strings.Contains(errs, `unknown column "order_id"`) {
		t.Errorf("missing column: exit %d: %s", code, errs)
	}
	code, _, errs = runCLI(t, "check", "-m", m, "--source", c.URI("shop", "ordrs", ""))
	if code != 2 || !strings.Contains(errs, "tables in shop: orders") {
		t.Errorf("unknown table: exit %d: %s", code, errs)
	}
}

// outputRows reads every data file a run lists in its manifest, with parquet-go.
func outputRows(t *testing.T, dir string) (rows []string, m *output.Manifest) {
	t.Helper()
	m, err := outputtest.Manifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range m.Regions {
		for _, f := range r.Files {
			fh, err := os.Open(filepath.Join(dir, filepath.FromSlash(f.Path)))
			if err != nil {
				t.Fatal(err)
			}
			st, _ := fh.Stat()
			pf, err := pq.OpenFile(fh, st.Size())
			if err != nil {
				t.Fatal(err)
			}
			rd := pq.NewReader(pf)
			buf := make([]pq.Row, 100)
			n := 0
			for {
				k, err := rd.ReadRows(buf)
				for _, row := range buf[:k] {
					parts := make([]string, len(row))
					for i, v := range row {
						parts[i] = v.String()
					}
					rows = append(rows, fmt.Sprintf("r%d|%s", r.Index, strings.Join(parts, "|")))
				}
				n += k
				if err != nil || k == 0 {
					break
				}
			}
			rd.Close()
			fh.Close()
			if int64(n) != f.Rows {
				t.Fatalf("%s: %d rows, manifest says %d", f.Path, n, f.Rows)
			}
		}
	}
	sort.Strings(rows)
	return rows, m
}

func TestShardedMigrationAndMerge(t *testing.T) {
	c := cassandratest.Open(t, cqltest.WithNodes(3), cqltest.WithVnodes(8))
	const n = 6000
	seedShop(t, c, n)
	dir := t.TempDir()
	for name, mapping := range map[string]string{"hash": hashMapping, "quantile": quantileMapping} {
		t.Run(name, func(t *testing.T) {
			m := writeFile(t, dir, name+".yaml", mapping)
			uri := c.URI("shop", "orders", "page_size=300")
			whole := filepath.Join(dir, name, "whole")
			mustRun(t, "migrate", "-m", m, "--source", uri, "--out", whole, "--progress", "never")
			want, wm := outputRows(t, whole)
			if len(want) != n || wm.RowsWritten != n {
				t.Fatalf("unsharded run: %d rows", len(want))
			}
			var shards []string
			for i := 0; i < 3; i++ {
				out := filepath.Join(dir, name, fmt.Sprintf("shard-%d", i))
				mustRun(t, "migrate", "-m", m, "--source", uri, "--shard", fmt.Sprintf("%d/3", i), "--out", out, "--progress", "never")
				shards = append(shards, out)
			}
			merged := filepath.Join(dir, name, "merged")
			out := mustRun(t, append(append([]string{"merge"}, shards...), "--out", merged)...)
			if !strings.Contains(out, "hard-linked") {
				t.Errorf("merge output: %s", out)
			}
			got, mm := outputRows(t, merged)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("merged shards: %d rows; unsharded: %d rows; they differ", len(got), len(want))
			}
			if mm.RowsIn != n || mm.RowsWritten != n || mm.MappingFingerprint != wm.MappingFingerprint || mm.Plan.Strategy != wm.Plan.Strategy ||
				strings.Join(mm.Plan.Splits, ",") != strings.Join(wm.Plan.Splits, ",") {
				t.Errorf("merged manifest %+v", mm)
			}
			for _, r := range mm.Regions {
				for _, f := range r.Files {
					if strings.Contains(f.Path, "..") || !strings.HasPrefix(f.Path, output.RegionDir(r.Index)+"/") {
						t.Errorf("file path %s", f.Path)
					}
				}
			}
			ddlA, _ := os.ReadFile(filepath.Join(whole, output.DDLFile))
			ddlB, _ := os.ReadFile(filepath.Join(merged, output.DDLFile))
			if string(ddlA) != string(ddlB) {
				t.Errorf("ddl differs:\n%s\n%s", ddlA, ddlB)
			}
			bl, _ := os.ReadFile(filepath.Join(merged, output.BulkloadFile))
			if !strings.Contains(string(bl), merged) {
				t.Errorf("bulkload.json does not read %s: %s", merged, bl)
			}
			// refusals: a shard missing, a shard twice, another mapping
			code, _, errs := runCLI(t, "merge", shards[0], shards[1], "--out", filepath.Join(dir, name, "m2"))
			if code != 2 || !strings.Contains(errs, "a shard is missing") {
				t.Errorf("missing shard: exit %d %s", code, errs)
			}
			code, _, errs = runCLI(t, "merge", shards[0], shards[1], shards[2], whole, "--out", filepath.Join(dir, name, "m3"))
			if code != 2 || !strings.Contains(errs, "both read") {
				t.Errorf("overlap: exit %d %s", code, errs)
			}
		})
	}
	code, _, errs := runCLI(t, "merge", filepath.Join(dir, "hash", "whole"), filepath.Join(dir, "quantile", "whole"), "--out", filepath.Join(dir, "mixed"))
	if code != 2 || !strings.Contains(errs, "mapping: fingerprint") {
		t.Errorf("different mappings: exit %d %s", code, errs)
	}
	// shards made with different region plans are refused; --files copy copies
	uri := c.URI("shop", "orders", "")
	m := filepath.Join(dir, "hash.yaml")
	p0, p1 := filepath.Join(dir, "plan0"), filepath.Join(dir, "plan1")
	mustRun(t, "migrate", "-m", m, "--source", uri, "--shard", "0/2", "--regions", "4", "--out", p0, "--progress", "never")
	mustRun(t, "migrate", "-m", m, "--source", uri, "--shard", "1/2", "--regions", "16", "--out", p1, "--progress", "never")
	code, _, errs = runCLI(t, "merge", p0, p1, "--out", filepath.Join(dir, "plans"))
	if code != 2 || !strings.Contains(errs, "region plan: hex_prefix, 16 regions, not hex_prefix, 4 regions") || !strings.Contains(errs, "run "+p1+" again as "+p0+" ran") {
		t.Errorf("different plans: exit %d %s", code, errs)
	}
	mustRun(t, "migrate", "-m", m, "--source", uri, "--shard", "1/2", "--regions", "4", "--out", filepath.Join(dir, "plan1b"), "--progress", "never")
	out := mustRun(t, "merge", p0, filepath.Join(dir, "plan1b"), "--out", filepath.Join(dir, "copied"), "--files", "copy")
	if rows, _ := outputRows(t, filepath.Join(dir, "copied")); len(rows) != n || !strings.Contains(out, "copied") {
		t.Errorf("--files copy: %d rows; %s", len(rows), out)
	}
	// regions.size plans depend on the size estimate: refused for shards unless --regions is given
	sized := writeFile(t, dir, "sized.yaml", strings.Replace(hashMapping, "  count: 8", "  size: 1GiB", 1))
	code, _, errs = runCLI(t, "migrate", "-m", sized, "--source", c.URI("shop", "orders", ""), "--shard", "0/2", "--out", filepath.Join(dir, "sized"))
	if code != 2 || !strings.Contains(errs, "regions.size") {
		t.Errorf("sized plan with --shard: exit %d %s", code, errs)
	}
}

func TestMigrateFailingRangeThenResume(t *testing.T) {
	c := cassandratest.Open(t)
	srv := c.Faults(t)
	seedShop(t, c, 3000)
	dir := t.TempDir()
	m := writeFile(t, dir, "m.yaml", hashMapping)
	uri := c.URI("shop", "orders", "splits=16&page_size=50&retries=2")
	out := filepath.Join(dir, "out")
	// page 3 of one range keeps timing out (after the sample's first pages went through)
	f := srv.FailPage(cqltest.FaultMatch{Table: "orders", Page: 3, Range: func(s, e int64) bool { return s < -5e18 }}, cqltest.ErrReadTimeout)
	code, _, errs := runCLI(t, "migrate", "-m", m, "--source", uri, "--out", out, "--checkpoint-interval", "5ms", "--progress", "never")
	if code == 0 || !strings.Contains(errs, "could not be read after retries") || !strings.Contains(errs, "range(") || !strings.Contains(errs, "--resume") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(out, output.ManifestFile)); err == nil {
		t.Fatal("a failed run wrote manifest.json")
	}
	srv.RemoveFault(f)
	mustRun(t, "migrate", "-m", m, "--source", uri, "--out", out, "--resume", "--progress", "never")
	rows, man := outputRows(t, out)
	if len(rows) != 3000 || man.RowsWritten != 3000 || man.RowsIn != 3000 {
		t.Fatalf("after resume: %d rows, manifest %d/%d", len(rows), man.RowsIn, man.RowsWritten)
	}
	// resuming with other splits is refused with a clear message
	out2 := filepath.Join(dir, "out2")
	f = srv.FailPage(cqltest.FaultMatch{Table: "orders", Page: 3, Range: func(s, e int64) bool { return s < -5e18 }}, cqltest.ErrReadTimeout)
	runCLI(t, "migrate", "-m", m, "--source", uri, "--out", out2, "--checkpoint-interval", "5ms", "--progress", "never")
	srv.RemoveFault(f)
	code, _, errs = runCLI(t, "migrate", "-m", m, "--source", c.URI("shop", "orders", "splits=64"), "--out", out2, "--resume", "--progress", "never")
	if code != 2 || !strings.Contains(errs, "source splits: 16 then, 64 now") {
		t.Errorf("resume with other splits: exit %d %s", code, errs)
	}
}

// A token range that keeps failing fails verify and report, which have no --resume, and a
// migrate of several mappings, which refuses it: their error names the range without telling to
// run them again with --resume; a migrate of one mapping says it, as before.
func TestFailingRangeAdviceFitsTheCommand(t *testing.T) {
	c := cassandratest.Open(t)
	srv := c.Faults(t)
	seedShop(t, c, 1000)
	dir := t.TempDir()
	m := writeFile(t, dir, "m.yaml", hashMapping)
	uri := c.URI("shop", "orders", "splits=16&page_size=50&retries=1")
	out := filepath.Join(dir, "out")
	mustRun(t, "migrate", "-m", m, "--source", uri, "--out", out, "--progress", "never")
	// page 2 of one range keeps timing out (the samples read first pages only)
	srv.FailPage(cqltest.FaultMatch{Table: "orders", Page: 2, Range: func(s, e int64) bool { return s < -5e18 }}, cqltest.ErrReadTimeout)
	m2 := writeFile(t, dir, "m2.yaml", strings.Replace(hashMapping, "table: orders", "table: orders2", 1))
	for _, args := range [][]string{
		{"verify", "-m", m, "--source", uri, "--target", out, "--progress", "never"},
		{"report", "-m", m, "--source", uri, "--progress", "never", "--tmp", dir},
		{"migrate", "-m", m, "-m", m2, "--source", uri, "--out", filepath.Join(dir, "tables"), "--progress", "never"},
	} {
		code, stdout, errs := runCLI(t, args...)
		if code == 0 || !strings.Contains(errs, "could not be read after retries") || strings.Contains(errs, "with --resume") {
			t.Errorf("rekey %s with a failing range: exit %d, want an error naming the range and no --resume\n%s%s", args[0], code, stdout, errs)
		}
	}
	code, _, errs := runCLI(t, "migrate", "-m", m, "--source", uri, "--out", filepath.Join(dir, "out2"), "--progress", "never")
	if code == 0 || !strings.Contains(errs, "could not be read after retries") || !strings.Contains(errs, "--resume") {
		t.Errorf("migrate with a failing range: exit %d: %s", code, errs)
	}
}

// A shard named in the source URI (shard=i/N) is migrate's --shard or nothing: migrate writes a
// shard's output (its next step rekey merge, not the bulk load of a part of the table as if it
// were the whole) only for --shard, so it refuses shard= without --shard, and a shard= that
// --shard would silently replace. verify of a shard's output reads the shard the URI names.
func TestMigrateRefusesAShardOnlyTheURINames(t *testing.T) {
	c := cassandratest.Open(t)
	seedShop(t, c, 500)
	dir := t.TempDir()
	m := writeFile(t, dir, "m.yaml", hashMapping)
	for _, args := range [][]string{
		{"--source", c.URI("shop", "orders", "shard=0/2")},
		{"--source", c.URI("shop", "orders", "shard=1/2"), "--shard", "0/2"},
	} {
		out := filepath.Join(dir, "out")
		code, stdout, errs := runCLI(t, append([]string{"migrate", "-m", m, "--out", out, "--progress", "never"}, args...)...)
		if code != exitUsage || !strings.Contains(errs, "--shard") {
			t.Errorf("migrate %s: exit %d, want %d naming --shard\n%s%s", strings.Join(args, " "), code, exitUsage, stdout, errs)
		}
		os.RemoveAll(out)
	}
	out := filepath.Join(dir, "shard-0")
	mustRun(t, "migrate", "-m", m, "--source", c.URI("shop", "orders", "shard=0/2"), "--shard", "0/2", "--out", out, "--progress", "never")
	if got := mustRun(t, "verify", "-m", m, "--source", c.URI("shop", "orders", "shard=0/2"), "--target", out, "--progress", "never"); !strings.Contains(got, "EQUAL") {
		t.Errorf("verify of shard 0/2's output:\n%s", got)
	}
}

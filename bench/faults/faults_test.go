package main

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

var (
	fullCampaign = flag.Bool("faults", false, "run the whole fault campaign (20 kills per source, 5 to 10 minutes) instead of the short one")
	campaignSeed = flag.Int64("seed", 0, "seed of the campaign's kill points (default: from the clock)")
)

var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// rekeyBinary builds ./cmd/rekey once for the package's tests.
func rekeyBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "rekey-faults-bin-"); built.err == nil {
			built.bin, built.err = buildRekey(built.dir)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// TestFaultCampaign kills `rekey migrate` (the real binary, built from ./cmd/rekey) and resumes it,
// for the file and the Cassandra source, and fails unless every run ends with the clean run's rows,
// counts and rejects (the full campaign kills migrate at 20 random points and resumes). Without
// -faults it runs a short campaign: 3 kills per source (one in the first 50 ms, one right after the
// final checkpoint, one anywhere) on small inputs. With -faults:
//
//	go test ./bench/faults -run TestFaultCampaign -faults -v -timeout 30m
func TestFaultCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rekey and runs it a dozen times")
	}
	cfg := Config{Sources: []string{"file", "cassandra"}, Kills: 3, Rows: 10000, CassandraRows: 10000, BadRows: 500,
		CleanRuns: 1, MaxResumeKills: 1, Interval: 50 * time.Millisecond, MaxFileSize: "64KiB"}
	if *fullCampaign {
		cfg = Config{Sources: []string{"file", "cassandra"}, Kills: 20, Rows: 150000, CassandraRows: 150000, BadRows: 7500,
			CleanRuns: 2, MaxResumeKills: 2, Interval: 200 * time.Millisecond, MaxFileSize: "256KiB"}
	}
	runCampaign(t, cfg)
}

// TestComparisonFindsDamage checks the campaign's judge: a real output compared with itself
// matches, and each kind of damage a faulty resume could leave is reported.
func TestComparisonFindsDamage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rekey")
	}
	dir := t.TempDir()
	src, err := fileSource(dir, 3000, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	mapping := filepath.Join(dir, "orders.yaml")
	if err := os.WriteFile(mapping, []byte(campaignMapping), 0o644); err != nil {
		t.Fatal(err)
	}
	clean := filepath.Join(dir, "clean")
	cmd := exec.Command(rekeyBinary(t), "migrate", "-m", mapping, "--source", src.uri, "--out", clean, "--progress", "never", "--max-file-size", "16KiB", "--max-rejects", "-1")
	if out, err := cmd.CombinedOutput(); err != nil && !completedWithRejects(err) {
		t.Fatalf("rekey migrate: %v\n%s", err, out)
	}
	ref, err := readOutput(clean)
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.problems) > 0 || len(ref.rows) != 3000 || len(ref.rejects) != 60 {
		t.Fatalf("clean output: %d rows, %d rejects, problems %v", len(ref.rows), len(ref.rejects), ref.problems)
	}
	if d := compare(ref, ref); len(d) > 0 {
		t.Fatalf("an output differs from itself: %v", d)
	}

	file0 := ref.manifest.Regions[0].Files[0]
	editManifest := func(out string, edit func(m *output.Manifest)) {
		m, err := outputtest.Manifest(out)
		if err != nil {
			t.Fatal(err)
		}
		edit(m)
		if err := outputtest.WriteManifest(out, m); err != nil {
			t.Fatal(err)
		}
	}
	editRejects := func(out string, edit func([]string) []string) {
		path := filepath.Join(out, output.RejectsFile)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := edit(strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"))
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		damage func(out string)
		want   []string
	}{
		{"a file left unlisted", func(out string) {
			data, _ := os.ReadFile(filepath.Join(out, file0.Path))
			os.WriteFile(filepath.Join(out, filepath.Dir(file0.Path), "part-09999.parquet"), data, 0o644)
		}, []string{"data file the manifest does not list: " + filepath.Join(filepath.Dir(file0.Path), "part-09999.parquet")}},
		{"a temporary file left", func(out string) {
			os.WriteFile(filepath.Join(out, filepath.Dir(file0.Path), atomicfile.TempPrefix+"part-00001.parquet"), nil, 0o644)
		}, []string{"temporary file left"}},
		{"a file's rows lost", func(out string) {
			os.Remove(filepath.Join(out, file0.Path))
			editManifest(out, func(m *output.Manifest) { m.Regions[0].Files = m.Regions[0].Files[1:] })
		}, []string{" lost, 0 extra", "lost e.g. " + file0.Path + " ["}},
		{"a file's rows twice", func(out string) {
			editManifest(out, func(m *output.Manifest) { m.Regions[0].Files = append(m.Regions[0].Files, file0) })
		}, []string{"0 lost, ", " of them duplicates of clean rows"}},
		{"counts", func(out string) {
			editManifest(out, func(m *output.Manifest) { m.RowsIn++; m.RowsRejected++ })
		}, []string{"manifest rows_in/rows_written/rows_rejected 3061/3000/61, clean run 3060/3000/60"}},
		{"a reject twice", func(out string) {
			editRejects(out, func(l []string) []string { return append(l, l[0]) })
		}, []string{"rejected more than once", "0 missing, 1 extra"}},
		{"a reject lost", func(out string) {
			editRejects(out, func(l []string) []string { return l[1:] })
		}, []string{"rejects.jsonl has 59 lines, the manifest says 60", "1 missing, 0 extra"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			if err := os.CopyFS(out, os.DirFS(clean)); err != nil {
				t.Fatal(err)
			}
			c.damage(out)
			got, err := readOutput(out)
			if err != nil {
				t.Fatal(err)
			}
			diffs := strings.Join(compare(ref, got), "; ")
			for _, w := range c.want {
				if !strings.Contains(diffs, w) {
					t.Errorf("the comparison does not say %q: %s", w, diffs)
				}
			}
		})
	}
}

// needVersitygw skips (or, with REKEY_REQUIRE_VERSITYGW=1 as in CI, fails) without versitygw.
func needVersitygw(t *testing.T) {
	t.Helper()
	if _, err := s3test.VersitygwPath(); err != nil {
		if os.Getenv("REKEY_REQUIRE_VERSITYGW") == "1" {
			t.Fatalf("REKEY_REQUIRE_VERSITYGW=1 but %v", err)
		}
		t.Skipf("skipping the object-store campaign: %v", err)
	}
}

// TestFaultCampaignObjectStore is the short campaign with --out on a bucket of versitygw, a real S3
// server (a kill at any point + resume = the clean run's rows, no duplicates, no stray objects):
// after the last resume the prefix must hold exactly the manifest's data objects and the
// checkpoint's rejects parts, with no unfinished multipart upload, and the rows of the clean run.
// The whole one: bash bench/faults.sh with STORE=versitygw.
func TestFaultCampaignObjectStore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rekey and runs it a dozen times")
	}
	needVersitygw(t)
	cfg := Config{Sources: []string{"file"}, Kills: 3, Rows: 10000, BadRows: 500, Store: "versitygw",
		CleanRuns: 1, MaxResumeKills: 1, Interval: 50 * time.Millisecond, MaxFileSize: "64KiB"}
	runCampaign(t, cfg)
}

// TestBucketCheckFindsDamage checks the object-store judge: a real run on versitygw has no
// problem, and a stray data object, a rejects part past the checkpoint's count and an
// unfinished multipart upload are each reported.
func TestBucketCheckFindsDamage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rekey")
	}
	needVersitygw(t)
	srv := s3test.StartVersitygw(t)
	dir := t.TempDir()
	src, err := fileSource(dir, 3000, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	mapping := filepath.Join(dir, "orders.yaml")
	if err := os.WriteFile(mapping, []byte(campaignMapping), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(rekeyBinary(t), "migrate", "-m", mapping, "--source", src.uri, "--out", srv.URIFor("run"), "--progress", "never", "--max-file-size", "16KiB", "--max-rejects", "-1")
	cmd.Env = os.Environ()
	for k, v := range srv.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil && !completedWithRejects(err) {
		t.Fatalf("rekey migrate: %v\n%s", err, out)
	}
	ctx := context.Background()
	st, err := s3store.Open(ctx, srv.URIFor("run"), s3test.Getenv(srv.Env))
	if err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(srv.Dir, s3test.Bucket, "run")
	ref, err := readOutputFrom(folder, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.problems) > 0 || len(ref.rows) != 3000 || len(ref.rejects) != 60 {
		t.Fatalf("clean output: %d rows, %d rejects, problems %v", len(ref.rows), len(ref.rejects), ref.problems)
	}
	cp, err := output.ReadCheckpoint(ctx, st)
	if err != nil || cp.RejectParts == 0 {
		t.Fatalf("checkpoint %+v: %v", cp, err)
	}
	stray := output.RegionDir(0) + "/part-09999.parquet"
	pastCount := output.RejectsPart(cp.RejectParts)
	for _, c := range []struct {
		name         string
		damage, undo func()
		want         string
	}{
		{"a stray data object", func() { st.Put(ctx, stray, []byte("x")) }, func() { st.Remove(ctx, stray) },
			"bucket: a data object the manifest does not list: " + stray},
		{"a rejects part past the count", func() { st.Put(ctx, pastCount, []byte("{}\n")) }, func() { st.Remove(ctx, pastCount) },
			"bucket: a rejects part the checkpoint does not count"},
		{"an unfinished upload", func() {
			w, _ := st.Create(ctx, output.RegionDir(1)+"/part-09999.parquet")
			w.Write(make([]byte, 9<<20)) // one 8 MiB part sent; never committed, never aborted
			time.Sleep(time.Second)
		}, func() { st.Sweep(ctx, "") }, "bucket: an unfinished multipart upload of " + output.RegionDir(1) + "/part-09999.parquet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.damage()
			defer c.undo()
			got, err := readOutputFrom(folder, st)
			if err != nil {
				t.Fatal(err)
			}
			if diffs := strings.Join(compare(ref, got), "; "); !strings.Contains(diffs, c.want) {
				t.Errorf("the comparison does not say %q: %s", c.want, diffs)
			}
		})
	}
}

// runCampaign runs a campaign with the test's rekey build and -seed (a random one when 0), and
// fails the test when a resumed run does not match the clean one.
func runCampaign(t *testing.T, cfg Config) {
	t.Helper()
	cfg.Rekey = rekeyBinary(t)
	cfg.Seed = uint64(*campaignSeed)
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano() % 1_000_000)
	}
	var out strings.Builder
	cfg.Out = &out
	ok, err := campaignMain(&cfg, t.TempDir(), JobConfig{})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("runs did not match the clean run (reproduce with -seed %d)", cfg.Seed)
	}
}

// TestKubernetesJobPlayed plays deploy/kubernetes' Indexed Job with the manifests' own arguments:
// every index's pods SIGKILLed at random instants until its backoffLimitPerIndex, replaced as the
// Job controller replaces them (they resume, each removing only its own leftovers while the other
// indexes write the same --out), the podFailurePolicy applied to exit codes, then merge-job.yaml's
// finishing step (metadata only) killed once and run again. The finished output must hold exactly
// what one process migrating the whole table writes, and nothing stray, on a folder and on versitygw.
func TestKubernetesJobPlayed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rekey and runs it a dozen times")
	}
	for _, store := range []string{"", "versitygw"} {
		t.Run("store="+store, func(t *testing.T) {
			if store != "" {
				needVersitygw(t)
			}
			seed := uint64(*campaignSeed)
			if seed == 0 {
				seed = uint64(time.Now().UnixNano() % 1_000_000)
			}
			var out strings.Builder
			cfg := Config{Rekey: rekeyBinary(t), Rows: 12000, BadRows: 60, Store: store, Seed: seed,
				Interval: 50 * time.Millisecond, MaxFileSize: "64KiB", Work: t.TempDir(), Out: &out}
			sum, err := RunJob(cfg, JobConfig{Manifests: "../../deploy/kubernetes", KillRate: 1})
			t.Log("\n" + out.String())
			if err != nil {
				t.Fatalf("%v (reproduce with -seed %d)", err, seed)
			}
			if sum.Kills == 0 || sum.Pods <= 8 || !sum.Matched {
				t.Fatalf("%d pods, %d killed, matched %v: the play killed no pod (reproduce with -seed %d)", sum.Pods, sum.Kills, sum.Matched, seed)
			}
		})
	}
}

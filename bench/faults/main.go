// Command faults is rekey's fault campaign: it kills `rekey migrate` with SIGKILL at random
// instants, resumes it with --resume until it finishes, and checks that the result is the clean
// run's: every row exactly once, the same counts, the same rejects, nothing left over.
//
//	bash bench/faults.sh                         # or: go run ./bench/faults
//	go run ./bench/faults -kills 20 -rows 150000 -cassandra-rows 150000 -seed 7
//	go run ./bench/faults -job deploy/kubernetes [-store versitygw]   # the Kubernetes Job, played
//
// For each source (a CSV file with planted bad rows; shop.orders on the CQL test server, which
// runs in this process while rekey connects to it over loopback) it builds the real rekey binary,
// runs a clean migration (the reference: every Parquet row read back with parquet-go, the
// manifest's counts, rejects.jsonl), then for each kill point runs the same migration with a short
// --checkpoint-interval and small files, kills it, and resumes it (some resumes are killed too).
// Kill points are spread over the clean run's duration: inside the first 50 ms (start, planning,
// the first checkpoint), the first second, the last 10% (the final commit and manifest.json),
// and at four states of the output: locked, the first checkpoint, the final checkpoint, ddl.sql.
//
// With -store versitygw every run writes to a prefix of a bucket on a real S3 server (versitygw,
// started by the campaign) instead of a local folder, and each finished run is also checked
// through the S3 API: the prefix holds exactly the manifest's data objects and the rejects parts
// the checkpoint counts, and no multipart upload is left unfinished.
//
// It prints one line per run (kill time, where the kill landed, resumes, matched or the
// difference) and "file: 20/20 runs matched the clean run's rows; cassandra: 20/20". It exits 1
// when a run did not match, keeping that run's output for inspection.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	var cfg Config
	var sources, work string
	var seed int64
	flag.StringVar(&cfg.Rekey, "rekey", "", "rekey binary to test (default: build ./cmd/rekey)")
	flag.StringVar(&sources, "sources", "file,cassandra", "sources to test: file, cassandra")
	flag.IntVar(&cfg.Kills, "kills", 20, "kill points per source")
	flag.IntVar(&cfg.Rows, "rows", 150000, "rows of the CSV file")
	flag.IntVar(&cfg.CassandraRows, "cassandra-rows", 150000, "rows of the Cassandra table")
	flag.IntVar(&cfg.BadRows, "bad-rows", -1, "rows planted in each source that the mapping rejects, ~1 KB each (default: 5% of -rows)")
	flag.Int64Var(&seed, "seed", 0, "seed of the kill points (default: from the clock; printed)")
	flag.DurationVar(&cfg.Interval, "checkpoint-interval", 200*time.Millisecond, "rekey's --checkpoint-interval")
	flag.StringVar(&cfg.MaxFileSize, "max-file-size", "256KiB", "rekey's --max-file-size")
	flag.IntVar(&cfg.CleanRuns, "clean-runs", 2, "clean runs, which must give the same output (the longest spreads the kill points)")
	flag.IntVar(&cfg.MaxResumeKills, "resume-kills", 2, "at most this many resumes of a run are killed too")
	flag.StringVar(&cfg.Store, "store", "", "write to an object store instead of local folders: versitygw (started by the campaign; $REKEY_VERSITYGW or ~/go/bin/versitygw)")
	flag.StringVar(&work, "work", "", "scratch directory (default: a temporary one, removed unless a run fails)")
	var job JobConfig
	flag.StringVar(&job.Manifests, "job", "", "play the Kubernetes Job of this folder's migrate-job.yaml and merge-job.yaml (deploy/kubernetes) instead of the campaign: an export of -rows rows in 12 CSV files (in the bucket with -store versitygw)")
	flag.Float64Var(&job.KillRate, "job-kill-rate", 0.4, "with -job: the share of pods SIGKILLed (each index at most backoffLimitPerIndex times)")
	flag.Parse()
	if seed == 0 {
		seed = time.Now().UnixNano() % 1_000_000
	}
	cfg.Seed = uint64(seed)
	if cfg.BadRows < 0 {
		cfg.BadRows = cfg.Rows / 20
	}
	cfg.Sources = strings.Split(sources, ",")
	cfg.Out = os.Stdout
	if job.Manifests != "" {
		cfg.Sources = []string{"export"}
	}
	ok, err := campaignMain(&cfg, work, job)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/faults:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// campaignMain prepares the scratch directory and the binary, runs the campaign and tells
// whether every run matched. The scratch directory is removed when it was temporary and every
// run matched.
func campaignMain(cfg *Config, work string, job JobConfig) (bool, error) {
	temp := work == ""
	if temp {
		d, err := os.MkdirTemp("", "rekey-faults-")
		if err != nil {
			return false, err
		}
		work = d
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return false, err
	}
	work, err := filepath.Abs(work)
	if err != nil {
		return false, err
	}
	cfg.Work = work
	if cfg.Rekey == "" {
		if cfg.Rekey, err = buildRekey(work); err != nil {
			return false, err
		}
	}
	var ok bool
	if job.Manifests != "" {
		_, err = RunJob(*cfg, job)
		ok = err == nil
	} else {
		var sums []Summary
		sums, err = Run(*cfg)
		ok = err == nil
		for _, s := range sums {
			ok = ok && s.Matched == s.Runs
		}
	}
	if ok && temp {
		os.RemoveAll(work)
	}
	return ok, err
}

// buildRekey builds ./cmd/rekey of the module this program belongs to into dir.
func buildRekey(dir string) (string, error) {
	// go test puts $GOROOT/bin first on a test binary's PATH
	gocmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building rekey needs the go command: %w (or pass -rekey)", err)
	}
	out, err := exec.Command(gocmd, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run from inside the rekey module (go env GOMOD is empty), or pass -rekey")
	}
	bin := filepath.Join(dir, "rekey")
	cmd := exec.Command(gocmd, "build", "-o", bin, "./cmd/rekey")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/rekey: %w\n%s", err, out)
	}
	return bin, nil
}

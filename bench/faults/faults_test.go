package main

import (
	"flag"
	"strings"
	"testing"
	"time"
)

var (
	fullCampaign = flag.Bool("faults", false, "run the whole fault campaign (20 kills per source, ~5 minutes) instead of the short one")
	campaignSeed = flag.Int64("seed", 0, "seed of the campaign's kill points (default: from the clock)")
)

// TestFaultCampaign kills `rekey migrate` (the real binary, built from ./cmd/rekey) and resumes
// it, for the file and the Cassandra source, and fails unless every run ends with the clean run's
// rows, counts and rejects (issue 9: "kills migrate at 20 random points ... and resumes").
// Without -faults it runs a short campaign: 3 kills per source (one in the first 50 ms, one right
// after the final checkpoint, one anywhere) on small inputs. With -faults:
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
	cfg.Seed = uint64(*campaignSeed)
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano() % 1_000_000)
	}
	var out strings.Builder
	cfg.Out = &out
	ok, err := campaignMain(&cfg, t.TempDir())
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("runs did not match the clean run (reproduce with -seed %d)", cfg.Seed)
	}
}

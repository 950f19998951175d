package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
	"go.yaml.in/yaml/v3"
)

// The Kubernetes Job, played on one machine: the shards of deploy/kubernetes/migrate-job.yaml run
// with the manifest's own arguments as the Job controller runs them (JOB_COMPLETION_INDEX, at most
// parallelism pods at once, a killed pod replaced by a new one of the same index until
// backoffLimitPerIndex, the podFailurePolicy's exit codes failing an index at once), some pods are
// SIGKILLed as a lost node would kill them, then merge-job.yaml's finishing step runs (and is
// killed once, and run again as its Job would). The merged output must equal one process migrating
// the whole table: the same rows, counts and rejects, nothing stray. When the indexes write one
// --out together (--shared-out), the finishing step writes its metadata only, and the rejects are
// every shard's own.

// indexVar is what the Job controller sets and Kubernetes expands in args.
const indexVar = "$(JOB_COMPLETION_INDEX)"

// jobSpec is what the simulation takes from the manifests.
type jobSpec struct {
	completions, parallelism, backoffLimitPerIndex int
	failIndex                                      map[int]bool // exit codes the podFailurePolicy fails the index on
	migrateArgs                                    []string
	mergeArgs                                      []string
	mergeBackoffLimit                              int
}

// loadJobSpec reads migrate-job.yaml and merge-job.yaml from dir. The manifests' Kubernetes fields
// are checked strictly by deploy/kubernetes' own tests; this reads only what it plays.
func loadJobSpec(dir string) (jobSpec, error) {
	type container struct {
		Name string   `yaml:"name"`
		Args []string `yaml:"args"`
	}
	type job struct {
		Spec struct {
			Completions          int `yaml:"completions"`
			Parallelism          int `yaml:"parallelism"`
			BackoffLimit         int `yaml:"backoffLimit"`
			BackoffLimitPerIndex int `yaml:"backoffLimitPerIndex"`
			PodFailurePolicy     struct {
				Rules []struct {
					Action      string `yaml:"action"`
					OnExitCodes struct {
						Operator string `yaml:"operator"`
						Values   []int  `yaml:"values"`
					} `yaml:"onExitCodes"`
				} `yaml:"rules"`
			} `yaml:"podFailurePolicy"`
			Template struct {
				Spec struct {
					Containers []container `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	read := func(name string) (job, error) {
		var j job
		text, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return j, err
		}
		if err := yaml.Unmarshal(text, &j); err != nil {
			return j, fmt.Errorf("%s: %w", name, err)
		}
		if len(j.Spec.Template.Spec.Containers) != 1 {
			return j, fmt.Errorf("%s: want one container", name)
		}
		return j, nil
	}
	migrate, err := read("migrate-job.yaml")
	if err != nil {
		return jobSpec{}, err
	}
	merge, err := read("merge-job.yaml")
	if err != nil {
		return jobSpec{}, err
	}
	s := jobSpec{completions: migrate.Spec.Completions, parallelism: migrate.Spec.Parallelism,
		backoffLimitPerIndex: migrate.Spec.BackoffLimitPerIndex, failIndex: map[int]bool{},
		migrateArgs: migrate.Spec.Template.Spec.Containers[0].Args, mergeArgs: merge.Spec.Template.Spec.Containers[0].Args,
		mergeBackoffLimit: merge.Spec.BackoffLimit}
	for _, r := range migrate.Spec.PodFailurePolicy.Rules {
		if r.Action == "FailIndex" && r.OnExitCodes.Operator == "In" {
			for _, c := range r.OnExitCodes.Values {
				s.failIndex[c] = true
			}
		}
	}
	if s.completions < 1 || s.parallelism < 1 || len(s.migrateArgs) == 0 || s.migrateArgs[0] != "migrate" || len(s.mergeArgs) == 0 || s.mergeArgs[0] != "merge" {
		return s, fmt.Errorf("%s: the manifests do not hold an indexed migrate Job and a merge Job", dir)
	}
	return s, nil
}

// JobConfig is one play of the Job.
type JobConfig struct {
	Manifests string  // deploy/kubernetes
	KillRate  float64 // the share of pods killed (each index at most backoffLimitPerIndex times)
}

// JobSummary is how the play went.
type JobSummary struct {
	Pods, Kills         int
	Succeeded           []int // indexes
	ExitedWithRejects   []int // indexes that ended with exit code 1 (complete; the policy fails the index)
	MergeKills          int
	Matched             bool
	Diffs               []string
	Single, Shards      time.Duration // one process vs the Job's wall time (shards and merge)
	SingleCPU, ShardCPU time.Duration
}

// place maps a manifest's bucket URI (…/shard-3?region=…, …/all?region=…) to a prefix of the play:
// its last path element under the campaign's folder, or the bucket prefix that folder holds.
func (c *campaign) place(uri string) string {
	u := uri
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	return filepath.Join(c.dir, "job", u[strings.LastIndexByte(u, '/')+1:])
}

// jobArgs rewrites a manifest's arguments for the play: the mapping (the ConfigMap's file), the
// source (the export's files, in a folder or the bucket) and every output (place) are swapped; the play adds a short
// --checkpoint-interval and small files so that kills land between and inside commits, and lifts
// the reject limit for the planted rows. index is substituted as Kubernetes does.
func (c *campaign) jobArgs(args []string, index int) []string {
	var out []string
	for _, a := range args {
		a = strings.ReplaceAll(a, indexVar, strconv.Itoa(index))
		name, value, isFlag := strings.Cut(a, "=")
		switch {
		case isFlag && (name == "--mapping" || name == "-m"):
			a = name + "=" + c.mapping
		case isFlag && name == "--source":
			a = name + "=" + c.src.uri
		case isFlag && name == "--out":
			a = name + "=" + c.outArg(c.place(value))
		case !strings.HasPrefix(a, "-") && strings.Contains(a, "://"):
			a = c.outArg(c.place(a))
		}
		out = append(out, a)
	}
	if out[0] == "migrate" {
		out = append(out, "--checkpoint-interval="+c.cfg.Interval.String(), "--max-file-size="+c.cfg.MaxFileSize, "--max-rejects=-1")
	}
	return out
}

// singleArgs is the Job's migrate as one process over the whole table: no --shard, no --resume.
func (c *campaign) singleArgs(spec jobSpec, out string) []string {
	var args []string
	for _, a := range c.jobArgs(spec.migrateArgs, 0) {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--shard", "--resume", "--shared-out":
		case "--out":
			args = append(args, "--out="+c.outArg(out))
		default:
			args = append(args, a)
		}
	}
	return args
}

type pod struct {
	index int
	a     *attempt
	res   result
	exit  int
}

// playJob runs the Job's pods and its merge, and compares the merged output with one process's.
func (c *campaign) playJob(jc JobConfig, spec jobSpec) (JobSummary, error) {
	var sum JobSummary
	os.RemoveAll(filepath.Join(c.dir, "job"))
	single := filepath.Join(c.dir, "single")
	os.RemoveAll(single)
	a := c.startArgs(c.singleArgs(spec, single), single)
	res := a.wait(kill{}, 10*time.Minute)
	if res.err != nil {
		return sum, fmt.Errorf("the single-process run: %w", res.err)
	}
	sum.Single, sum.SingleCPU = res.elapsed, cpuOf(a)
	ref, err := c.read(single)
	if err != nil {
		return sum, fmt.Errorf("the single-process run: %w", err)
	}
	if len(ref.problems) > 0 || ref.manifest.RowsIn != c.src.rows {
		return sum, fmt.Errorf("the single-process run is wrong: %d rows in of %d; %v", ref.manifest.RowsIn, c.src.rows, ref.problems)
	}
	// A pod is killed at a random instant of what one shard takes alone.
	shardTime := max(50*time.Millisecond, res.elapsed*time.Duration(spec.parallelism)/time.Duration(spec.completions))

	start := time.Now()
	pending := make([]int, spec.completions)
	for i := range pending {
		pending[i] = i
	}
	failures := map[int]int{}
	done := make(chan pod)
	running := 0
	for len(pending) > 0 || running > 0 {
		for running < spec.parallelism && len(pending) > 0 {
			i := pending[0]
			pending = pending[1:]
			k := kill{}
			if failures[i] < spec.backoffLimitPerIndex && c.rng.Float64() < jc.KillRate {
				k.after = time.Duration(c.rng.Int64N(int64(shardTime)))
			}
			p := pod{index: i, a: c.startArgs(c.jobArgs(spec.migrateArgs, i), c.place(strings.ReplaceAll(flagValue(spec.migrateArgs, "--out"), indexVar, strconv.Itoa(i))))}
			running++
			sum.Pods++
			go func() {
				p.res = p.a.wait(k, 10*time.Minute)
				p.exit = exitCode(p.a, p.res)
				done <- p
			}()
		}
		p := <-done
		running--
		sum.ShardCPU += cpuOf(p.a)
		if !p.res.killed && p.res.err == nil || p.exit == 1 {
			// the kills of the pods started from now on land within what a shard really takes:
			// estimated from the single run alone, a loaded machine's slower single run put most
			// kill instants after the shards' ends, and a play could kill no pod at all
			shardTime = max(time.Millisecond, min(shardTime, p.res.elapsed))
		}
		switch {
		case p.res.killed:
			sum.Kills++
		case p.res.hung, p.res.err != nil && p.exit == 0:
			return sum, fmt.Errorf("index %d: %w", p.index, p.res.err)
		}
		switch {
		case p.exit == 0:
			sum.Succeeded = append(sum.Succeeded, p.index)
		case spec.failIndex[p.exit]:
			if p.exit != 1 {
				return sum, fmt.Errorf("index %d failed with exit code %d: %v", p.index, p.exit, p.res.err)
			}
			sum.ExitedWithRejects = append(sum.ExitedWithRejects, p.index)
		default:
			if failures[p.index]++; failures[p.index] > spec.backoffLimitPerIndex {
				return sum, fmt.Errorf("index %d failed %d times (backoffLimitPerIndex %d), last: exit %d %v", p.index, failures[p.index], spec.backoffLimitPerIndex, p.exit, p.res.err)
			}
			pending = append([]int{p.index}, pending...) // the controller replaces the pod at once
		}
	}

	// The finishing step: killed once at a random instant, then run again as its Job would.
	mergeArgs := c.jobArgs(spec.mergeArgs, 0)
	merged := c.place(flagValue(spec.mergeArgs, "--out"))
	for attemptNo := 0; ; attemptNo++ {
		k := kill{}
		if attemptNo == 0 && spec.mergeBackoffLimit > 0 {
			k.after = time.Duration(c.rng.Int64N(int64(max(time.Millisecond, res.elapsed/10))))
		}
		a := c.startArgs(mergeArgs, merged)
		r := a.wait(k, 10*time.Minute)
		sum.ShardCPU += cpuOf(a)
		if r.killed {
			sum.MergeKills++
			continue
		}
		if r.err != nil {
			return sum, fmt.Errorf("merge: %w", r.err)
		}
		break
	}
	sum.Shards = time.Since(start)
	read := c.readMerged
	if slices.Contains(spec.migrateArgs, "--shared-out") {
		read = c.readShared
	}
	got, err := read(merged)
	if err != nil {
		return sum, fmt.Errorf("the merged output: %w", err)
	}
	sum.Diffs = compareJob(ref, got)
	sum.Matched = len(sum.Diffs) == 0
	slices.Sort(sum.Succeeded)
	slices.Sort(sum.ExitedWithRejects)
	return sum, nil
}

// compareJob is compare for a merged output against one process's: rejects are compared by what
// they say about a row (position, stage, code, field), since a shard numbers its streams and
// batches its own way, and only the files a bulk load reads are compared by name.
func compareJob(ref, got *runOutput) []string {
	key := func(o *runOutput) *runOutput {
		c := *o
		c.rejects = nil
		for _, line := range o.rejects {
			c.rejects = append(c.rejects, rejectKey(line))
		}
		slices.Sort(c.rejects)
		// what a bulk load reads; a run also keeps its lock and checkpoint, merge has neither
		c.names = slices.DeleteFunc(slices.Clone(o.names), func(n string) bool {
			return !slices.Contains([]string{"bulkload.json", "data", "ddl.sql", "manifest.json"}, n)
		})
		return &c
	}
	return compare(key(ref), key(got))
}

func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// exitCode is the pod's exit code as Kubernetes sees it: 137 for a SIGKILL.
func exitCode(a *attempt, r result) int {
	if r.killed {
		return 137
	}
	if a.cmd.ProcessState == nil {
		return -1
	}
	return a.cmd.ProcessState.ExitCode()
}

func cpuOf(a *attempt) time.Duration {
	if a.cmd.ProcessState == nil {
		return 0
	}
	return a.cmd.ProcessState.UserTime() + a.cmd.ProcessState.SystemTime()
}

// RunJob plays the Job once per store and prints what happened.
func RunJob(cfg Config, jc JobConfig) (JobSummary, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	spec, err := loadJobSpec(jc.Manifests)
	if err != nil {
		return JobSummary{}, err
	}
	c, cleanup, err := prepare(cfg, "export")
	if err != nil {
		return JobSummary{}, err
	}
	defer cleanup()
	c.rng = rand.New(rand.NewPCG(cfg.Seed, 2))
	fmt.Fprintf(cfg.Out, "job: %d indexes, %d at a time, backoffLimitPerIndex %d, seed %d, %s, %d rows (%d bad)\n",
		spec.completions, spec.parallelism, spec.backoffLimitPerIndex, cfg.Seed, c.label, c.src.rows, c.src.bad)
	sum, err := c.playJob(jc, spec)
	if err != nil {
		return sum, err
	}
	verdict := "matched the single-process run"
	if !sum.Matched {
		verdict = "DIFFERS from the single-process run: " + strings.Join(sum.Diffs, "; ")
	}
	fmt.Fprintf(cfg.Out, "job: %d pods (%d killed), merge killed %d time(s); indexes %v succeeded, %v exited 1 (rows rejected); %s\n",
		sum.Pods, sum.Kills, sum.MergeKills, sum.Succeeded, sum.ExitedWithRejects, verdict)
	fmt.Fprintf(cfg.Out, "job: wall %.2fs (shards and merge) vs %.2fs one process; CPU %.2fs vs %.2fs (%.2fx)\n",
		sum.Shards.Seconds(), sum.Single.Seconds(), sum.ShardCPU.Seconds(), sum.SingleCPU.Seconds(), sum.ShardCPU.Seconds()/max(1e-9, sum.SingleCPU.Seconds()))
	if !sum.Matched {
		return sum, errors.New("the Job's output differs")
	}
	return sum, nil
}

// rejectKey is what a rejects.jsonl line says about the row: position, stage, code and field.
func rejectKey(line string) string {
	var rj struct{ Position, Stage, Code, Field string }
	if err := json.Unmarshal([]byte(line), &rj); err != nil {
		return line // compare reports it as it is
	}
	return rj.Position + " " + rj.Stage + " " + rj.Code + " " + rj.Field
}

// readShared reads back the output the indexes wrote together and merge --out finished: the
// files its manifest lists, and every shard's rejects (on a folder, its rejects.jsonl up to its
// checkpoint; in a bucket, the parts its checkpoint counts, with what the bucket lists checked
// shard by shard and at the top, which holds only the metadata merge wrote).
func (c *campaign) readShared(out string) (*runOutput, error) {
	ctx := context.Background()
	var root store.Store
	if c.srv == nil {
		local, err := store.NewLocal(out)
		if err != nil {
			return nil, err
		}
		root = local
	} else {
		st, err := s3store.Open(ctx, c.outArg(out), s3test.Getenv(c.srv.Env))
		if err != nil {
			return nil, err
		}
		root = st
	}
	return readOutputWith(out, func(*output.Manifest) (rejects []byte, problems []string, err error) {
		shards, err := output.SharedShards(ctx, root)
		if err != nil {
			return nil, nil, err
		}
		for _, sh := range shards {
			view := output.ShardStore(root, sh)
			cp, err := output.ReadCheckpoint(ctx, view)
			if err != nil {
				return nil, nil, err
			}
			if cp == nil || !cp.Complete {
				problems = append(problems, fmt.Sprintf("shard %s: no complete checkpoint", sh))
				continue
			}
			if c.srv == nil {
				data, err := view.Get(ctx, output.RejectsFile)
				if err != nil && !store.IsNotExist(err) {
					return nil, nil, err
				}
				rejects = append(rejects, data[:min(int64(len(data)), cp.RejectsBytes)]...)
				continue
			}
			m, err := output.ReadManifest(ctx, view)
			if err != nil {
				return nil, nil, err
			}
			data, more, err := checkBucket(view, m, false)
			if err != nil {
				return nil, nil, err
			}
			rejects = append(rejects, data...)
			for _, p := range more {
				problems = append(problems, fmt.Sprintf("shard %s: %s", sh, p))
			}
		}
		if c.srv != nil {
			objs, err := root.List(ctx, "")
			if err != nil {
				return nil, nil, err
			}
			for _, o := range objs {
				top, _, nested := strings.Cut(o.Name, "/")
				if !nested && !slices.Contains([]string{output.ManifestFile, output.DDLFile, output.BulkloadFile}, top) ||
					nested && top != output.DataDir && top != output.ShardsDir {
					problems = append(problems, "bucket: an object that is none of the finished output's: "+o.Name)
				}
			}
			if problems, err = checkUnfinished(root, problems); err != nil {
				return nil, nil, err
			}
		}
		return rejects, problems, nil
	})
}

// readMerged reads back merge's output (on an object store, also through the S3 API).
func (c *campaign) readMerged(out string) (*runOutput, error) {
	if c.srv == nil {
		return readOutputAt(out, nil, true)
	}
	st, err := s3store.Open(context.Background(), c.outArg(out), s3test.Getenv(c.srv.Env))
	if err != nil {
		return nil, err
	}
	return readOutputAt(out, st, true)
}

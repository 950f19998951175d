package output

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// ShardsDir holds, in an output the N shards of one migration write together (migrate --shard i/N
// --shared-out), each shard's own files beside data/: its checkpoint, rejects, lock and manifest
// (shards/0002-of-0004/checkpoint.json). The shards' data files sit in the shared data/ under names
// that carry the shard (data/region-0003/s0002-part-00007.parquet), so nothing is copied to finish.
const ShardsDir = "shards"

// ShardDir is shard sh's folder in a shared output: "shards/0002-of-0004".
func ShardDir(sh pipeline.Shard) string {
	return fmt.Sprintf("%s/%04d-of-%04d", ShardsDir, sh.Index, sh.Count)
}

// ShardFilePrefix begins the names of shard sh's data files in a shared output: "s0002-". The bulk
// load reads data/ whole and does not care about names; the prefix keeps the N shards' files
// apart, so that each shard's resume removes only what it wrote itself.
func ShardFilePrefix(sh pipeline.Shard) string { return fmt.Sprintf("s%04d-", sh.Index) }

// ParseShardDir reads a shard folder's name ("0002-of-0004", under ShardsDir).
func ParseShardDir(name string) (pipeline.Shard, bool) {
	a, b, ok := strings.Cut(name, "-of-")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	sh := pipeline.Shard{Index: i, Count: n}
	return sh, ok && err1 == nil && err2 == nil && n >= 1 && i >= 0 && i < n && ShardDir(sh) == ShardsDir+"/"+name
}

// SharedShards lists the shards whose folders the shared output st holds (any count: the caller
// refuses a mix), in the order of their folders.
func SharedShards(ctx context.Context, st store.Store) ([]pipeline.Shard, error) {
	objs, err := st.List(ctx, ShardsDir+"/")
	if err != nil {
		return nil, err
	}
	var shards []pipeline.Shard
	for _, o := range objs {
		folder, _, _ := strings.Cut(strings.TrimPrefix(o.Name, ShardsDir+"/"), "/")
		sh, ok := ParseShardDir(folder)
		if !ok {
			return nil, fmt.Errorf("%s is not a shard's folder (%s/NNNN-of-NNNN/): was the output changed by hand?", st.Location(ShardsDir+"/"+folder+"/"), ShardsDir)
		}
		if !slices.Contains(shards, sh) {
			shards = append(shards, sh)
		}
	}
	return shards, nil
}

// OpenShard opens shard sh of the shared output st, as Open does a whole output: the shard's own
// lock (N shards run at once; two runs of one shard never do), checkpoint, rejects and final files
// in ShardDir(sh), its data files in the shared data/. It first refuses an output that is not the
// shared output of this migration's shards: a whole-table run (or a merge) there, shards of another
// count, or a migration already finished (its manifest.json written) unless resuming.
func OpenShard(ctx context.Context, st store.Store, sh pipeline.Shard, spec Spec, logger *zap.Logger) (*Output, error) {
	if spec.Dir == "" {
		spec.Dir = st.Location("")
	}
	if sh.Whole() {
		return nil, refuse("--shared-out needs --shard i/N: it is the output the N shards of one migration write together")
	}
	if err := checkShared(ctx, st, sh, spec); err != nil {
		return nil, err // before the lock below, which would create a lock file: left as it was
	}
	// On a folder the shards share the output's own lock, which a run of the whole table (or a
	// merge) takes alone: one that holds it may have written nothing checkShared sees yet, and
	// one that took it since the check above has; checked again once the lock is the shards'.
	var shared *os.File
	if d, ok := st.(store.Dir); ok {
		var err error
		if shared, err = lockDirShared(d.Path(), spec.Dir); err != nil {
			return nil, err
		}
		if err := checkShared(ctx, st, sh, spec); err != nil {
			shared.Close()
			return nil, err
		}
	}
	o, err := Open(ctx, ShardStore(st, sh), spec, logger)
	if err != nil {
		closeFile(shared)
		return nil, err
	}
	o.shared = shared
	// after Open: a resume has adopted what its own checkpoint fixed (a Cassandra split count)
	if o.peers, err = shardPeers(ctx, st, sh, spec); err == nil {
		err = o.checkPeers(spec, func(p shardPeer) []string { return p.diffs(spec) })
	}
	if err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// shardPeer is another shard of a shared output, as its checkpoint records it.
type shardPeer struct {
	sh pipeline.Shard
	cp *pipeline.Checkpoint
}

// shardPeers reads the checkpoints of the shards of st other than sh (a shard killed before its
// first checkpoint has none: it is checked when it runs again).
func shardPeers(ctx context.Context, st store.Store, sh pipeline.Shard, spec Spec) ([]shardPeer, error) {
	shards, err := SharedShards(ctx, st)
	if err != nil {
		return nil, refuse("--out %s: %v", spec.Dir, err)
	}
	var peers []shardPeer
	for _, other := range shards {
		if other == sh {
			continue
		}
		cp, err := ReadCheckpoint(ctx, ShardStore(st, other))
		if err != nil {
			return nil, fmt.Errorf("--out %s: shard %s: %w", spec.Dir, other, err)
		}
		if cp != nil {
			peers = append(peers, shardPeer{sh: other, cp: cp})
		}
	}
	return peers, nil
}

// diffs lists how a run of spec differs from the shard p: what every shard of one migration shares.
func (p shardPeer) diffs(spec Spec) []string {
	where := "in shard " + p.sh.String()
	var diffs []string
	if p.cp.Fingerprint != spec.Fingerprint {
		diffs = append(diffs, fmt.Sprintf("mapping: fingerprint %.12s %s, %.12s here", p.cp.Fingerprint, where, spec.Fingerprint))
	}
	if p.cp.Format != "" && spec.Format != "" && p.cp.Format != spec.Format {
		diffs = append(diffs, fmt.Sprintf("--format: %s %s, %s here", p.cp.Format, where, spec.Format))
	}
	if spec.Regions > 0 && spec.Regions != regionsAsked(p.cp) {
		diffs = append(diffs, fmt.Sprintf("--regions: %d %s, %d here", regionsAsked(p.cp), where, spec.Regions))
	}
	if now := pipeline.SourceIdentity(spec.Source); now != nil && p.cp.Source != nil {
		for _, d := range p.cp.Source.WithoutShard().DiffNamed(now.WithoutShard(), where, "here") {
			if strings.HasPrefix(d, "splits:") { // a Cassandra split count left to its default
				d += " (the default follows the machine's core count: give every shard the same splits= in --source)"
			}
			diffs = append(diffs, "--source "+d)
		}
	}
	return diffs
}

// checkPeers refuses to go on when diffs finds this shard of another migration than a shard
// already in the output.
func (o *Output) checkPeers(spec Spec, diffs func(shardPeer) []string) error {
	for _, p := range o.peers {
		if d := diffs(p); len(d) > 0 {
			return refuse("--out %s holds the shards of another migration than this one: shard %s ran otherwise:\n  %s\n"+
				"every shard of one migration runs with the same mapping, --source (but for --shard), --format, --regions, --sort and --max-file-size: run this shard as shard %s ran, or run this migration in a new --out",
				spec.Dir, p.sh, strings.Join(d, "\n  "), p.sh)
		}
	}
	return nil
}

// SharedPlan is, for a shard of a shared output, the region plan of the shards already there
// (their checkpoints') when plan, this shard's own, differs from it in its splits only: a live
// source sampled later gives other quantile splits, which would refuse every shard after the first.
// Otherwise (another count or strategy: other flags; any other output) it is plan.
func (o *Output) SharedPlan(plan pipeline.RegionPlan) pipeline.RegionPlan {
	if len(o.peers) > 0 && planText(o.peers[0].cp.Plan, false) == planText(plan, false) {
		return o.peers[0].cp.Plan
	}
	return plan
}

// CheckSharedPlan refuses, for a shard of a shared output, a region plan other than the one the
// shards already there use (the files of one region are loaded together); for any other output
// it accepts any plan.
func (o *Output) CheckSharedPlan(plan pipeline.RegionPlan) error {
	return o.checkPeers(Spec{Dir: o.Dir}, func(p shardPeer) []string {
		a, b := planText(p.cp.Plan, false), planText(plan, false)
		if a == b { // the same count and strategy: other splits?
			a, b = planText(p.cp.Plan, true), planText(plan, true)
		}
		if a != b {
			return []string{fmt.Sprintf("region plan: %s in shard %s, %s here", a, p.sh, b)}
		}
		return nil
	})
}

// CheckSharedSettings refuses, for a shard of a shared output, a run whose settings differ from
// those of a shard already there: diffs compares the settings its checkpoint keeps (Checkpoint.Job,
// which the migration writes) with this run's, one line per setting that differs ("--sort: true
// in shard 0/3, false here"; peer names the shard). For any other output it accepts any.
func (o *Output) CheckSharedSettings(diffs func(peer string, job json.RawMessage) []string) error {
	return o.checkPeers(Spec{Dir: o.Dir}, func(p shardPeer) []string { return diffs(p.sh.String(), p.cp.Job) })
}

// planText describes a region plan for comparisons and people: its count and strategy, and with
// splits a digest of its split values.
func planText(p pipeline.RegionPlan, splits bool) string {
	text := fmt.Sprintf("%d regions (%s", p.Count(), p.Strategy)
	if splits {
		h := sha256.New()
		for _, v := range p.Splits {
			fmt.Fprintf(h, "%s\n", pipeline.SplitValue(p.Type, v))
		}
		text += fmt.Sprintf(", splits %x", h.Sum(nil)[:4])
	}
	return text + ")"
}

// checkShared refuses to run shard sh in st when st holds something else than shards of its count.
func checkShared(ctx context.Context, st store.Store, sh pipeline.Shard, spec Spec) error {
	// a replication that has committed no roll yet holds no data file nor manifest to refuse it by
	if _, err := st.Stat(ctx, ReplicateStateFile); err == nil {
		return refuse("--out %s holds a replication (rekey replicate: %s), not a migration: rekey replicate continues it; migrate into a new --out directory", spec.Dir, ReplicateStateFile)
	} else if !store.IsNotExist(err) {
		return fmt.Errorf("--out %s: %w", spec.Dir, err)
	}
	for _, name := range []string{CheckpointFile, MergePlanFile} {
		if _, err := st.Stat(ctx, name); err == nil {
			return refuse("--out %s holds a run of the whole table (%s), not shards: a shard with --shared-out writes into an output only shards of one migration write; choose a new --out", spec.Dir, name)
		} else if !store.IsNotExist(err) {
			return fmt.Errorf("--out %s: %w", spec.Dir, err)
		}
	}
	shards, err := SharedShards(ctx, st)
	if err != nil {
		return refuse("--out %s: %v", spec.Dir, err)
	}
	for _, other := range shards {
		if other.Count != sh.Count {
			return refuse("--out %s holds shards of a migration in %d shards (%s) and this is shard %s: every shard of a migration is i/N with the same N; choose a new --out for another split",
				spec.Dir, other.Count, ShardDir(other), sh)
		}
	}
	data, err := st.List(ctx, DataDir+"/")
	if err != nil {
		return fmt.Errorf("--out %s: %w", spec.Dir, err)
	}
	for _, o := range data {
		if shardOfData(o.Name) < 0 {
			return refuse("--out %s holds %s, a data file of a run of the whole table (or a merge), not of a shard: choose a new --out", spec.Dir, o.Name)
		}
	}
	if _, err := st.Stat(ctx, ManifestFile); err == nil && !spec.Resume {
		return refuse("--out %s holds a finished migration (%s, written by rekey merge --out): its shards are complete; to run it again, choose a new --out", spec.Dir, ManifestFile)
	}
	return nil
}

// shardOfData is the index of the shard whose data file name is ("data/region-0003/s0002-..."),
// -1 for a name no shard writes.
func shardOfData(name string) int {
	base := name[strings.LastIndexByte(name, '/')+1:]
	rest, ok := strings.CutPrefix(base, "s")
	digits, _, cut := strings.Cut(rest, "-")
	if !ok || !cut {
		return -1
	}
	// at least four digits: shard 10000 and up has more (ShardFilePrefix)
	i, err := strconv.Atoi(digits)
	if err != nil || i < 0 || ShardFilePrefix(pipeline.Shard{Index: i}) != "s"+digits+"-" {
		return -1
	}
	return i
}

// ShardStore is shard sh's part of the shared output st, seen as an output of its own: names
// under data/ are the shared data/ narrowed to the shard's own files (ShardFilePrefix), every
// other name lives in ShardDir(sh). Listing, removing and sweeping never reach another shard's
// files or unfinished uploads, so a shard's resume removes only what it wrote itself. A local
// folder stays a store.Dir whose Path is the shard's folder (its flock, rejects and sort spills);
// an object store's conditional writes stay offered (the shard's lock).
func ShardStore(st store.Store, sh pipeline.Shard) store.Store {
	s := &shardStore{root: st, dir: ShardDir(sh) + "/", prefix: ShardFilePrefix(sh)}
	if d, ok := st.(store.Dir); ok {
		return shardDir{shardStore: s, path: filepath.Join(d.Path(), filepath.FromSlash(ShardDir(sh)))}
	}
	if c, ok := st.(store.ConditionalPutter); ok {
		return shardCAS{shardStore: s, cas: c}
	}
	return s
}

type shardStore struct {
	root   store.Store
	dir    string // "shards/0002-of-0004/"
	prefix string // "s0002-"
}

// shardDir is the shard of a local folder.
type shardDir struct {
	*shardStore
	path string
}

func (d shardDir) Path() string { return d.path }

// shardCAS is the shard of an object store with conditional writes.
type shardCAS struct {
	*shardStore
	cas store.ConditionalPutter
}

func (c shardCAS) GetVersion(ctx context.Context, name string) ([]byte, string, error) {
	return c.cas.GetVersion(ctx, c.real(name))
}

func (c shardCAS) PutIf(ctx context.Context, name string, data []byte, ifVersion string) (string, error) {
	return c.cas.PutIf(ctx, c.real(name), data, ifVersion)
}

func isDataName(name string) bool { return name == DataDir || strings.HasPrefix(name, DataDir+"/") }

// real is the name in the shared output.
func (s *shardStore) real(name string) string {
	if isDataName(name) {
		return name
	}
	return s.dir + name
}

// own tells whether the data file name is this shard's.
func (s *shardStore) own(name string) bool {
	return strings.HasPrefix(name[strings.LastIndexByte(name, '/')+1:], s.prefix)
}

// errNotOwn refuses a write of a data file that is not the shard's: its name would be another's.
func (s *shardStore) errNotOwn(name string) error {
	return fmt.Errorf("%s: a shard writes only data files named %s...: another shard owns this name", s.root.Location(name), s.prefix)
}

func (s *shardStore) Create(ctx context.Context, name string) (store.Writer, error) {
	if isDataName(name) && !s.own(name) {
		return nil, s.errNotOwn(name)
	}
	return s.root.Create(ctx, s.real(name))
}

func (s *shardStore) Put(ctx context.Context, name string, data []byte) error {
	if isDataName(name) && !s.own(name) {
		return s.errNotOwn(name)
	}
	return s.root.Put(ctx, s.real(name), data)
}

func (s *shardStore) Get(ctx context.Context, name string) ([]byte, error) {
	return s.root.Get(ctx, s.real(name))
}

func (s *shardStore) Open(ctx context.Context, name string) (store.Reader, error) {
	return s.root.Open(ctx, s.real(name))
}

func (s *shardStore) Stat(ctx context.Context, name string) (store.Info, error) {
	info, err := s.root.Stat(ctx, s.real(name))
	info.Name = name
	return info, err
}

// coversData tells whether a List or Sweep of prefix reaches into data/.
func coversData(prefix string) bool {
	return strings.HasPrefix(DataDir+"/", prefix) || isDataName(prefix)
}

func (s *shardStore) List(ctx context.Context, prefix string) ([]store.Info, error) {
	var all []store.Info
	if !isDataName(prefix) {
		objs, err := s.root.List(ctx, s.dir+prefix)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			o.Name = strings.TrimPrefix(o.Name, s.dir)
			all = append(all, o)
		}
	}
	if coversData(prefix) {
		objs, err := s.root.List(ctx, max(prefix, DataDir+"/"))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if s.own(o.Name) && strings.HasPrefix(o.Name, prefix) {
				all = append(all, o)
			}
		}
	}
	slices.SortFunc(all, func(a, b store.Info) int { return strings.Compare(a.Name, b.Name) })
	return all, nil
}

func (s *shardStore) Remove(ctx context.Context, names ...string) error {
	real := make([]string, len(names))
	for i, n := range names {
		if isDataName(n) && !s.own(n) {
			return s.errNotOwn(n)
		}
		real[i] = s.real(n)
	}
	return s.root.Remove(ctx, real...)
}

// unfinishedLister is a store that can list its unfinished uploads (s3store).
type unfinishedLister interface {
	Unfinished(ctx context.Context, prefix string) ([]string, error)
}

// Sweep removes what this shard's unfinished writers left: in its folder, and under data/ only
// under its own names (another shard's uploads in flight are left alone).
func (s *shardStore) Sweep(ctx context.Context, prefix string) error {
	if !isDataName(prefix) {
		if err := s.root.Sweep(ctx, s.dir+prefix); err != nil {
			return err
		}
	}
	if !coversData(prefix) {
		return nil
	}
	regions, err := s.regionDirs(ctx)
	if err != nil {
		return fmt.Errorf("sweep %s: %w", s.root.Location(DataDir+"/"), err)
	}
	for _, r := range regions {
		mine := DataDir + "/" + r + "/" + s.prefix
		switch {
		case strings.HasPrefix(mine, prefix):
		case strings.HasPrefix(prefix, mine):
			mine = prefix
		default:
			continue
		}
		if err := s.root.Sweep(ctx, mine); err != nil {
			return err
		}
	}
	return nil
}

// regionDirs names the region folders under data/ that may hold unfinished writes: on a folder,
// those on disk; on a bucket that lists its unfinished uploads, theirs; elsewhere those that
// hold files.
func (s *shardStore) regionDirs(ctx context.Context) ([]string, error) {
	var names []string
	add := func(name string) {
		folder, _, _ := strings.Cut(strings.TrimPrefix(name, DataDir+"/"), "/")
		if isRegionDir(folder) && !slices.Contains(names, folder) {
			names = append(names, folder)
		}
	}
	switch r := s.root.(type) {
	case store.Dir:
		entries, err := os.ReadDir(filepath.Join(r.Path(), DataDir))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() {
				add(DataDir + "/" + e.Name() + "/")
			}
		}
	case unfinishedLister:
		unfinished, err := r.Unfinished(ctx, DataDir+"/")
		if err != nil {
			return nil, err
		}
		for _, n := range unfinished {
			add(n)
		}
	default: // the folders that hold files: an upload in flight in a folder without any is missed
		objs, err := s.root.List(ctx, DataDir+"/")
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			add(o.Name)
		}
	}
	return names, nil
}

func (s *shardStore) Location(name string) string { return s.root.Location(s.real(name)) }

package replicate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// Manifest is manifest.json of a replication output: sink/lindorm's manifest (regions with
// their data files, totals) plus a "replication" section listing every segment in the order to
// apply them. Readers of a migrate manifest (output.Manifest) see the data files and ignore the extra section.
//
// manifest.json is also where a roll commits: a roll's files count once manifest.json lists
// them, and its messages count then, once (see manifest.commit). RowsIn, RowsWritten and
// RowsRejected are the sums of Replication.Partitions: every message of a committed roll is
// either written (its upsert and delete statements are in the roll's files; a Debezium tombstone
// following its delete event needs none), rejected (one line in the roll's rejects file), or
// skipped as an event of another table than the mapping's source.table (RowsSkipped), so
// rows_in = rows_written + rows_rejected + rows_skipped.
type Manifest struct {
	output.Manifest
	Replication Replication `json:"replication"`
}

// Replication describes the stream and its segments.
type Replication struct {
	Topic  string `json:"topic"`
	Group  string `json:"group"`
	Format string `json:"message_format"`
	// Partitions: per partition, where it continues and what its committed rolls hold.
	Partitions []PartitionEntry `json:"partitions"`
	// Segments in the order to apply them within a region: by partition, then first offset.
	// Each segment's data file goes through bulkload; then its delete file's statements run.
	// Segments of different partitions of a region are independent when every source row is
	// always sent to the same partition (Kafka key partitioning, as Debezium does).
	Segments []SegmentEntry `json:"segments"`
	// Rejects are the rejects files of the committed rolls, by partition and first offset.
	Rejects []RejectFile `json:"rejects"`
	Deletes int64        `json:"delete_statements"`
	Updated time.Time    `json:"updated_at"`
}

// PartitionEntry sums a partition's committed rolls.
type PartitionEntry struct {
	Partition int `json:"partition"`
	// NextOffset follows the last committed roll: the partition's next owner continues there
	// whatever offset Kafka has (the offset commit comes after the manifest).
	NextOffset int64 `json:"next_offset"`
	Rolls      int64 `json:"rolls"`
	Messages   int64 `json:"rows_in"`
	Written    int64 `json:"rows_written"`
	Rejected   int64 `json:"rows_rejected"`
	// Upserts are the rows in data files; Deletes the DELETE statements (a key deleted twice
	// in a segment is written once); TombstonesDropped the Debezium tombstones whose delete
	// event did the work (counted as written).
	Upserts           int64 `json:"upserts"`
	Deletes           int64 `json:"delete_statements"`
	TombstonesDropped int64 `json:"tombstones_dropped"`
	// OtherTable are the messages of other tables than the mapping's source.table (a topic of
	// several tables), not applied: rows_in = rows_written + rows_rejected + other_table.
	OtherTable int64 `json:"other_table,omitempty"`
	// Gaps are the runs of messages the topic deleted (retention) before they were read,
	// skipped with --accept-gaps: their changes are not in the table.
	Gaps []Gap `json:"gaps,omitempty"`
	// Staged are the renames of the partition's last committed roll on a folder: its files keep
	// their temporary names until this manifest lists them, so that the folder never shows a file
	// of an uncommitted roll. A crash before the renames leaves them to the partition's next
	// owner (manifest.claim); a reader finds them done otherwise.
	Staged []output.Staged `json:"staged,omitempty"`
}

// Gap is a run of a partition's messages, from NextOffset to FirstOffset-1, deleted before they
// were read.
type Gap struct {
	NextOffset  int64     `json:"next_offset"`  // the committed next offset
	FirstOffset int64     `json:"first_offset"` // the earliest available one, where reading continued
	Messages    int64     `json:"messages"`
	At          time.Time `json:"skipped_at"`
}

// SegmentEntry is one committed segment.
type SegmentEntry struct {
	Region      int               `json:"region"`
	Partition   int               `json:"partition"`
	FirstOffset int64             `json:"first_offset"`
	RollLast    int64             `json:"roll_last_offset"`
	Data        *output.FileEntry `json:"data,omitempty"`
	Deletes     *DeleteFile       `json:"deletes,omitempty"`
}

// DeleteFile is a file of DELETE statements.
type DeleteFile struct {
	Region int    `json:"-"`
	Path   string `json:"path"`
	Keys   int64  `json:"statements"`
	Bytes  int64  `json:"bytes"`
}

// RejectFile is the rejects file of one roll: a line per rejected message.
type RejectFile struct {
	Partition   int    `json:"partition"`
	FirstOffset int64  `json:"first_offset"`
	RollLast    int64  `json:"roll_last_offset"`
	Path        string `json:"path"`
	Rejects     int64  `json:"rejects"`
}

// manifest is this process's copy of manifest.json.
type manifest struct {
	mu     sync.Mutex
	st     store.Store             // where manifest.json is
	cl     output.CommitLock       // taken for every change of the output's shared files
	base   func() *output.Manifest // a fresh manifest (schema, plan) to fill
	repl   Replication
	log    *zap.Logger
	rev    int64 // revision of the copy; -1: reload
	legacy bool  // loaded from a manifest without partitions (written before rolls committed there)

	segs    map[string]SegmentEntry // by region and base name
	rejects map[string]RejectFile   // by path
	parts   map[int]*PartitionEntry
}

func segKey(region, partition int, first, last int64) string {
	return fmt.Sprintf("%d/%s", region, output.RollName(partition, first, last))
}

// openManifest opens the manifest of the output st (out names it in messages) and its commit
// lock: a folder's members share it, an object store's prefix has one member.
func openManifest(ctx context.Context, st store.Store, out string, base func() *output.Manifest, repl Replication, log *zap.Logger) (*manifest, error) {
	cl, err := output.OpenCommitLock(ctx, st, out, log)
	if err != nil {
		if errors.Is(err, output.ErrRefusedResume) {
			return nil, fmt.Errorf("%w.\nOn an object store a consumer group has one member per --out prefix: a bucket offers no lock that members could share to commit their rolls. Run one member, or replicate to a folder the members share", err)
		}
		return nil, outputFailed(err)
	}
	return &manifest{st: st, cl: cl, base: base, repl: repl, log: log, rev: -1}, nil
}

func (m *manifest) close() error { return m.cl.Release() }

// lock takes the output's commit lock (a folder's other members wait) and brings the copy up to
// date (on an object store, which only this process writes, it reads manifest.json once).
func (m *manifest) lock(ctx context.Context) (unlock func(), err error) {
	m.mu.Lock()
	rev, err := m.cl.Lock(ctx)
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	unlock = func() {
		m.cl.Unlock()
		m.mu.Unlock()
	}
	if rev != m.rev {
		if err := m.load(ctx, rev); err != nil {
			unlock()
			return nil, err
		}
	}
	return unlock, nil
}

// load reads manifest.json (the lock is held).
func (m *manifest) load(ctx context.Context, rev int64) error {
	m.segs, m.rejects, m.parts = map[string]SegmentEntry{}, map[string]RejectFile{}, map[int]*PartitionEntry{}
	var old Manifest
	ok, err := getJSON(ctx, m.st, output.ManifestFile, &old)
	if err != nil {
		return err
	}
	if ok {
		path := m.st.Location(output.ManifestFile)
		for _, s := range old.Replication.Segments {
			// the paths are carried into every manifest written from now on, which merge and the
			// bulk load follow: refuse one outside the output
			var err error
			if s.Data != nil {
				err = output.CheckRelPath(s.Data.Path)
			}
			if s.Deletes != nil && err == nil {
				err = output.CheckRelPathIn(s.Deletes.Path, output.DeletesDir)
			}
			if err != nil {
				return fmt.Errorf("%s: segment %s: %w", path, output.RollName(s.Partition, s.FirstOffset, s.RollLast), err)
			}
			m.segs[segKey(s.Region, s.Partition, s.FirstOffset, s.RollLast)] = s
		}
		for _, r := range old.Replication.Rejects {
			if name, ok := strings.CutPrefix(r.Path, output.RejectsDir+"/"); !ok || !filepath.IsLocal(name) || strings.ContainsAny(name, `/\`) {
				return fmt.Errorf("%s: rejects of partition %d: %q: %w", path, r.Partition, r.Path, output.ErrUnsafePath)
			}
			m.rejects[r.Path] = r
		}
		for _, p := range old.Replication.Partitions {
			p := p
			for _, st := range p.Staged {
				if err := st.Check(); err != nil {
					return fmt.Errorf("%s: partition %d: %w", path, p.Partition, err)
				}
			}
			m.parts[p.Partition] = &p
		}
		if len(old.Replication.Partitions) == 0 && len(old.Replication.Segments) > 0 {
			// an earlier rekey listed segments only: each partition continues after them
			m.legacy = true
			for _, s := range old.Replication.Segments {
				pe := m.partition(s.Partition)
				pe.NextOffset = max(pe.NextOffset, s.RollLast+1)
			}
		}
	}
	m.rev = rev
	return nil
}

func (m *manifest) partition(p int) *PartitionEntry {
	pe := m.parts[p]
	if pe == nil {
		pe = &PartitionEntry{Partition: p}
		m.parts[p] = pe
	}
	return pe
}

// rollCommit is what a closing roll adds to the manifest.
type rollCommit struct {
	partition   int
	first, last int64
	expect      int64 // the partition's next offset as this member last knew it (0: none)
	messages    int64
	rejected    int64
	upserts     int64
	dropped     int64
	other       int64 // messages of other tables than the mapping's source.table
	// stage readies the finished files under their final names (output.PendingFile.Stage: on
	// an object store uploads them) and returns what the manifest lists; it runs under the
	// lock, once the partition is known to be still this member's
	stage func() ([]segmentFiles, *RejectFile, []output.Staged, error)
	// rename gives a folder's staged files their final names once manifest.json lists them,
	// under the lock
	rename func() error
	// writing runs as the manifest that lists the roll is written: from then on the roll may be
	// committed, also when the write fails (it may fail after the new manifest replaced the old)
	writing func()
}

// errLost: another member committed the partition since this member was assigned it.
var errLost = errors.New("partition lost")

// commit commits a roll: manifest.json is rewritten, then its files are renamed, under the lock.
// manifest.json lists a roll or not, so a crash at any instant leaves the roll wholly committed
// (its messages counted once, its files listed: those a crash left under their temporary names
// are renamed by the partition's next owner) or not at all (its files are orphans, under their
// temporary names on a folder, that the partition's next owner removes, and the roll is replayed
// from the committed offset). On a folder no file of a roll has its final name before the
// manifest lists it: the bulk load reads data/ whole.
func (m *manifest) commit(ctx context.Context, c *rollCommit) error {
	unlock, err := m.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	var next int64
	if pe := m.parts[c.partition]; pe != nil {
		next = pe.NextOffset
	}
	if next != c.expect {
		// a compare-and-swap of the partition's next offset: only a member that lost the
		// partition (stopped past its session timeout, then resumed) or whose partition went
		// to a member that resumed so gets here; committing would count messages twice or
		// leave a gap
		return fmt.Errorf("partition %d: another member committed it up to offset %d since this member was assigned it (this roll: %d-%d): %w; the roll is discarded, restart this member to continue after it",
			c.partition, next-1, c.first, c.last, errLost)
	}
	segs, rej, staged, err := c.stage()
	if err != nil {
		m.rev = -1
		return err
	}
	pe := m.partition(c.partition)
	for _, s := range segs {
		e := SegmentEntry{Region: s.Region, Partition: s.Partition, FirstOffset: s.First, RollLast: s.Last, Deletes: s.Deletes}
		if s.Data != nil {
			e.Data = &output.FileEntry{Path: s.Data.Path, Rows: s.Data.Rows, Bytes: s.Data.Bytes}
		}
		if s.Deletes != nil {
			pe.Deletes += s.Deletes.Keys
		}
		m.segs[segKey(s.Region, s.Partition, s.First, s.Last)] = e
	}
	if rej != nil {
		m.rejects[rej.Path] = *rej
	}
	pe.NextOffset = c.last + 1
	pe.Rolls++
	pe.Messages += c.messages
	pe.Written += c.messages - c.rejected - c.other
	pe.Rejected += c.rejected
	pe.OtherTable += c.other
	pe.Upserts += c.upserts
	pe.TombstonesDropped += c.dropped
	pe.Staged = staged
	if c.writing != nil {
		c.writing()
	}
	if err := m.write(ctx); err != nil {
		m.rev = -1 // the copy is ahead of the file: reload it
		return fmt.Errorf("the roll %d-%d may be committed (its files are left for the partition's next owner, which renames them if manifest.json lists them, else removes them): %w", c.first, c.last, err)
	}
	if err := c.rename(); err != nil {
		return fmt.Errorf("the roll %d-%d is committed, its files not all renamed (the partition's next owner renames them): %w", c.first, c.last, err)
	}
	pe.Staged = nil // done: the next write drops them
	return nil
}

// noteGap records a gap of partition in manifest.json at once: the rolls after it may commit
// much later. A gap seen again (a restart before those rolls committed) is recorded once.
func (m *manifest) noteGap(ctx context.Context, partition int, next, first int64) error {
	unlock, err := m.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	pe := m.partition(partition)
	i := 0
	for i < len(pe.Gaps) && pe.Gaps[i].NextOffset != next {
		i++
	}
	switch {
	case i == len(pe.Gaps):
		pe.Gaps = append(pe.Gaps, Gap{NextOffset: next, FirstOffset: first, Messages: first - next, At: time.Now().UTC()})
	case pe.Gaps[i].FirstOffset >= first:
		return nil
	default:
		pe.Gaps[i].FirstOffset, pe.Gaps[i].Messages = first, first-next
	}
	if err := m.write(ctx); err != nil {
		m.rev = -1
		return err
	}
	return nil
}

// claimed is a partition's state when this member is assigned it.
type claimed struct {
	entry PartitionEntry
	known bool // the folder holds committed rolls of the partition
	other bool // ... or of other partitions
}

// claim prepares partitions this member was just assigned: the files an interrupted roll of
// theirs left (under temporary names, or renamed but never listed in manifest.json) are
// removed, and each partition's entry says where it continues.
//
// Which temporary files are safe to remove: a partition's files are written only by the member
// it is assigned to, and Kafka assigns it to one member at a time (a member closes its rolls
// before it rejoins the group, and claims only inside the generation's routine, which kafka-go
// waits for before it rejoins: a generation that ended first claims nothing). So the files of a partition this member now owns are left by
// an earlier owner that was killed or lost it: they go, whichever member wrote them. Files of
// other partitions may belong to a live member's open roll, and are left alone.
func (m *manifest) claim(ctx context.Context, partitions []int, regions int) (map[int]claimed, error) {
	if len(partitions) == 0 {
		return nil, nil
	}
	unlock, err := m.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := m.renameStaged(ctx, partitions); err != nil {
		return nil, err
	}
	own := map[int]bool{}
	for _, p := range partitions {
		own[p] = true
	}
	listed := map[string]bool{}
	for _, s := range m.segs {
		if own[s.Partition] {
			if s.Data != nil {
				listed[s.Data.Path] = true
			}
			if s.Deletes != nil {
				listed[s.Deletes.Path] = true
			}
		}
	}
	for path, r := range m.rejects {
		if own[r.Partition] {
			listed[path] = true
		}
	}
	folders := []string{output.RejectsDir}
	for i := 0; i < regions; i++ {
		folders = append(folders, output.RegionDir(i), output.DeletesRegionDir(i))
	}
	if err := m.removeUnlisted(ctx, own, listed, folders); err != nil {
		return nil, err
	}
	err = m.cl.SweepOwned(ctx, folders, func(name string) bool {
		p, ok := output.RollPendingPartition(name)
		return ok && own[p]
	})
	if err != nil {
		return nil, err
	}
	out := map[int]claimed{}
	for _, p := range partitions {
		c := claimed{other: len(m.parts) > 0}
		if pe := m.parts[p]; pe != nil && pe.NextOffset > 0 { // an entry with only a gap has no roll
			c.entry, c.known = *pe, true
		}
		out[p] = c
	}
	return out, nil
}

// renameStaged gives the files of the partitions' last committed rolls their final names where
// a crash after the roll's manifest left them under their temporary names (the lock is held).
func (m *manifest) renameStaged(ctx context.Context, partitions []int) error {
	var done bool
	for _, p := range partitions {
		pe := m.parts[p]
		if pe == nil || len(pe.Staged) == 0 {
			continue
		}
		if err := output.RenameStaged(ctx, m.st, pe.Staged); err != nil {
			return fmt.Errorf("partition %d: finish its last committed roll: %w", p, err)
		}
		pe.Staged, done = nil, true
	}
	if !done {
		return nil
	}
	if err := m.write(ctx); err != nil {
		m.rev = -1
		return err
	}
	return nil
}

// removeUnlisted removes the files of the partitions own under folders that the manifest does
// not list: the files of a roll whose manifest was never written.
func (m *manifest) removeUnlisted(ctx context.Context, own map[int]bool, listed map[string]bool, folders []string) error {
	want := map[string]bool{}
	for _, f := range folders {
		want[f] = true
	}
	var stray []string
	for _, top := range []string{output.DataDir + "/", output.DeletesDir + "/", output.RejectsDir + "/"} {
		objs, err := m.st.List(ctx, top)
		if err != nil {
			return fmt.Errorf("list %s: %w", m.st.Location(top), err)
		}
		for _, o := range objs {
			folder, name := path.Split(o.Name)
			p, ok := output.RollPartition(name)
			if !ok || !want[strings.TrimSuffix(folder, "/")] || !own[p] || listed[o.Name] {
				continue
			}
			stray = append(stray, o.Name)
		}
	}
	if len(stray) == 0 {
		return nil
	}
	if err := m.st.Remove(ctx, stray...); err != nil {
		return fmt.Errorf("remove %d objects left by an interrupted roll: %w", len(stray), err)
	}
	m.log.Info("removed the objects of interrupted rolls", zap.Int("objects", len(stray)))
	return nil
}

// write rewrites manifest.json from the copy; the lock is held.
func (m *manifest) write(ctx context.Context) error {
	if err := m.cl.Bump(m.rev + 1); err != nil {
		return err
	}
	m.rev++
	out := Manifest{Manifest: *m.base(), Replication: m.repl}
	out.Replication.Segments = make([]SegmentEntry, 0, len(m.segs))
	var infos []pipeline.FileInfo
	for _, s := range m.segs {
		out.Replication.Segments = append(out.Replication.Segments, s)
		if s.Data != nil {
			infos = append(infos, pipeline.FileInfo{Region: s.Region, Path: s.Data.Path, Rows: s.Data.Rows, Bytes: s.Data.Bytes})
		}
		if s.Deletes != nil {
			out.Replication.Deletes += s.Deletes.Keys
		}
	}
	SortSegments(out.Replication.Segments)
	out.Replication.Rejects = make([]RejectFile, 0, len(m.rejects))
	for _, r := range m.rejects {
		out.Replication.Rejects = append(out.Replication.Rejects, r)
	}
	sort.Slice(out.Replication.Rejects, func(i, j int) bool { return out.Replication.Rejects[i].Path < out.Replication.Rejects[j].Path })
	out.Replication.Partitions = make([]PartitionEntry, 0, len(m.parts))
	for _, p := range m.parts {
		out.Replication.Partitions = append(out.Replication.Partitions, *p)
		out.RowsIn += p.Messages
		out.RowsWritten += p.Written
		out.RowsRejected += p.Rejected
		out.RowsSkipped += p.OtherTable
	}
	sort.Slice(out.Replication.Partitions, func(i, j int) bool {
		return out.Replication.Partitions[i].Partition < out.Replication.Partitions[j].Partition
	})
	if err := out.AddFiles(infos); err != nil {
		return err
	}
	out.Replication.Updated = time.Now().UTC()
	return putJSON(ctx, m.st, output.ManifestFile, &out)
}

// SortSegments puts segments in the order they apply (CompareSegments).
func SortSegments(segs []SegmentEntry) { slices.SortStableFunc(segs, CompareSegments) }

// CompareSegments orders segments as they apply: by region, then partition, then offset (a roll's
// data file before a later roll's).
func CompareSegments(a, b SegmentEntry) int {
	return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Partition, b.Partition),
		cmp.Compare(a.FirstOffset, b.FirstOffset), cmp.Compare(a.RollLast, b.RollLast))
}

package replicate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/store"
)

// Manifest is manifest.json of a replication output: sink/lindorm's manifest (regions with
// their data files, totals) plus a "replication" section listing every segment in the order to
// apply them. Readers of the lindorm manifest see the data files and ignore the extra section.
//
// manifest.json is also where a roll commits: a roll's files count once manifest.json lists
// them, and its messages count then, once (see manifest.commit). RowsIn, RowsWritten and
// RowsRejected are the sums of Replication.Partitions: every message of a committed roll is
// either written (its upsert and delete statements are in the roll's files; a Debezium tombstone
// following its delete event needs none) or rejected (one line in the roll's rejects file), so
// rows_in = rows_written + rows_rejected.
type Manifest struct {
	lindorm.Manifest
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
	// Gaps are the runs of messages the topic deleted (retention) before they were read,
	// skipped with --accept-gaps: their changes are not in the table.
	Gaps []Gap `json:"gaps,omitempty"`
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
	Region      int                `json:"region"`
	Partition   int                `json:"partition"`
	FirstOffset int64              `json:"first_offset"`
	RollLast    int64              `json:"roll_last_offset"`
	Data        *lindorm.FileEntry `json:"data,omitempty"`
	Deletes     *DeleteFile        `json:"deletes,omitempty"`
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
	dir    string                   // a local folder's path ("" on an object store)
	st     store.Store              // where manifest.json is: the folder, or the object store
	base   func() *lindorm.Manifest // a fresh lindorm manifest (schema, plan) to fill
	repl   Replication
	lockf  *os.File          // a folder's lock file, shared by the members
	held   *output.StoreLock // an object store's lock, this member's alone
	log    *zap.Logger
	rev    int64 // revision of the copy; -1: reload
	legacy bool  // loaded from a manifest without partitions (written before rolls committed there)

	segs    map[string]SegmentEntry // by region and base name
	rejects map[string]RejectFile   // by path
	parts   map[int]*PartitionEntry
}

func segKey(region, partition int, first, last int64) string {
	return fmt.Sprintf("%d/%s", region, SegmentName(partition, first, last))
}

func openManifest(dir string, base func() *lindorm.Manifest, repl Replication, log *zap.Logger) (*manifest, error) {
	f, err := os.OpenFile(filepath.Join(dir, output.ReplicateLockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", output.ReplicateLockFile, err)
	}
	st, err := store.NewLocal(dir)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &manifest{dir: dir, st: st, base: base, repl: repl, lockf: f, log: log, rev: -1}, nil
}

// storeManifest is the manifest of an object store's prefix, which one member writes: held is
// its lock, checked before every commit.
func storeManifest(base func() *lindorm.Manifest, repl Replication, held *output.StoreLock, log *zap.Logger) *manifest {
	return &manifest{base: base, repl: repl, held: held, log: log, rev: -1}
}

func (m *manifest) close() error {
	if m.held != nil {
		return m.held.Release()
	}
	return m.lockf.Close()
}

// lock takes the folder's lock (other members wait) and brings the copy up to date. On an
// object store only this process writes (it holds the output's lock): it reads manifest.json
// once, and checks before each change that the lock is still its own.
func (m *manifest) lock() (unlock func(), err error) {
	m.mu.Lock()
	if m.held != nil {
		if err := m.held.Held(context.Background()); err != nil {
			m.mu.Unlock()
			return nil, err
		}
		if m.rev < 0 {
			if err := m.load(0); err != nil {
				m.mu.Unlock()
				return nil, err
			}
		}
		return m.mu.Unlock, nil
	}
	fd := int(m.lockf.Fd())
	if err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err == syscall.EWOULDBLOCK {
		// members hold it for a roll's renames and manifest: a long wait is not one of them
		slow := time.AfterFunc(time.Minute, func() {
			m.log.Warn("waiting over a minute for the output folder's lock, held by another process (an earlier rekey replicate, which held it for its whole run?)",
				zap.String("lock", filepath.Join(m.dir, output.ReplicateLockFile)))
		})
		for err = syscall.EINTR; err == syscall.EINTR; {
			err = syscall.Flock(fd, syscall.LOCK_EX)
		}
		slow.Stop()
	}
	if err != nil {
		m.mu.Unlock()
		return nil, fmt.Errorf("lock %s: %w", filepath.Join(m.dir, output.ReplicateLockFile), err)
	}
	unlock = func() {
		syscall.Flock(fd, syscall.LOCK_UN)
		m.mu.Unlock()
	}
	rev, err := m.readRev()
	if err == nil && rev != m.rev {
		err = m.load(rev)
	}
	if err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// readRev reads the revision in the lock file (0 when empty).
func (m *manifest) readRev() (int64, error) {
	var b [24]byte
	n, err := m.lockf.ReadAt(b[:], 0)
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("read %s: %w", output.ReplicateLockFile, err)
	}
	s := strings.TrimSpace(string(b[:n]))
	if s == "" {
		return 0, nil
	}
	rev, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is damaged (%q): remove it while no member runs", filepath.Join(m.dir, output.ReplicateLockFile), s)
	}
	return rev, nil
}

// bump announces a new revision before manifest.json changes: a member that dies between the
// two leaves the others reloading an unchanged manifest, never trusting a stale copy.
func (m *manifest) bump() error {
	rev := m.rev + 1
	// revisions only grow, so the new number overwrites the old one wholly: no truncation,
	// which a crash could leave as an empty file reading as revision 0
	if _, err := m.lockf.WriteAt([]byte(strconv.FormatInt(rev, 10)+"\n"), 0); err != nil {
		return fmt.Errorf("write %s: %w", output.ReplicateLockFile, err)
	}
	m.rev = rev
	return nil
}

// load reads manifest.json (the lock is held).
func (m *manifest) load(rev int64) error {
	m.segs, m.rejects, m.parts = map[string]SegmentEntry{}, map[string]RejectFile{}, map[int]*PartitionEntry{}
	var old Manifest
	ok, err := getJSON(context.Background(), m.st, output.ManifestFile, &old)
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
				return fmt.Errorf("%s: segment %s: %w", path, SegmentName(s.Partition, s.FirstOffset, s.RollLast), err)
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
	// rename gives the finished files their final names and makes the renames durable; it
	// runs under the lock, once the partition is known to be still this member's
	rename func() ([]segmentFiles, *RejectFile, error)
}

// errLost: another member committed the partition since this member was assigned it.
var errLost = errors.New("partition lost")

// commit commits a roll: its files are renamed and manifest.json rewritten under the lock.
// manifest.json lists a roll or not, so a crash at any instant leaves the roll wholly committed
// (its messages counted once, its files listed) or not at all (its files are orphans the
// partition's next owner removes, and the roll is replayed from the committed offset).
func (m *manifest) commit(c *rollCommit) error {
	unlock, err := m.lock()
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
	segs, rej, err := c.rename()
	if err != nil {
		m.rev = -1
		return err
	}
	pe := m.partition(c.partition)
	for _, s := range segs {
		e := SegmentEntry{Region: s.Region, Partition: s.Partition, FirstOffset: s.First, RollLast: s.Last, Deletes: s.Deletes}
		if s.Data != nil {
			e.Data = &lindorm.FileEntry{Path: s.Data.Path, Rows: s.Data.Rows, Bytes: s.Data.Bytes}
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
	pe.Written += c.messages - c.rejected
	pe.Rejected += c.rejected
	pe.Upserts += c.upserts
	pe.TombstonesDropped += c.dropped
	if err := m.write(); err != nil {
		m.rev = -1 // the copy is ahead of the file: reload it
		return err
	}
	return nil
}

// noteGap records a gap of partition in manifest.json at once: the rolls after it may commit
// much later. A gap seen again (a restart before those rolls committed) is recorded once.
func (m *manifest) noteGap(partition int, next, first int64) error {
	unlock, err := m.lock()
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
	if err := m.write(); err != nil {
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
// before it rejoins the group). So the files of a partition this member now owns are left by
// an earlier owner that was killed or lost it: they go, whichever member wrote them. Files of
// other partitions may belong to a live member's open roll, and are left alone.
func (m *manifest) claim(partitions []int, regions int) (map[int]claimed, error) {
	if len(partitions) == 0 {
		return nil, nil
	}
	unlock, err := m.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
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
	if m.held != nil {
		if err := m.removeUnlisted(own, listed, folders); err != nil {
			return nil, err
		}
	}
	for _, folder := range folders {
		if m.held != nil {
			break
		}
		ents, err := os.ReadDir(filepath.Join(m.dir, filepath.FromSlash(folder)))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", filepath.Join(m.dir, folder), err)
		}
		for _, e := range ents {
			name := e.Name()
			p, ok := filePartition(name)
			if !ok || !own[p] || listed[folder+"/"+name] {
				continue
			}
			if err := os.Remove(filepath.Join(m.dir, filepath.FromSlash(folder), name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("remove %s, left by an interrupted roll: %w", folder+"/"+name, err)
			}
		}
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

// removeUnlisted removes from an object store the objects of the partitions own under folders
// that the manifest does not list: the uploads of a roll whose manifest was never written.
// (Nothing uncommitted is ever an object: unfinished uploads were aborted at start.)
func (m *manifest) removeUnlisted(own map[int]bool, listed map[string]bool, folders []string) error {
	ctx := context.Background()
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
			p, ok := filePartition(name)
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

// filePartition returns the partition of a segment or rejects file, committed (named by
// SegmentName) or temporary (tmpName).
func filePartition(name string) (int, bool) {
	if rest, ok := strings.CutPrefix(name, pipeline.TempPrefix); ok {
		digits, _, ok := strings.Cut(strings.TrimPrefix(rest, "p"), "-")
		if !ok || len(digits) < 4 || !strings.HasPrefix(rest, "p") {
			return 0, false
		}
		p, err := strconv.Atoi(digits)
		return p, err == nil && p >= 0
	}
	p, _, _, ok := ParseSegmentName(name)
	return p, ok
}

// write rewrites manifest.json from the copy; the lock is held.
func (m *manifest) write() error {
	if m.held == nil {
		if err := m.bump(); err != nil {
			return err
		}
	}
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
	}
	sort.Slice(out.Replication.Partitions, func(i, j int) bool {
		return out.Replication.Partitions[i].Partition < out.Replication.Partitions[j].Partition
	})
	if err := out.AddFiles(infos); err != nil {
		return err
	}
	out.Replication.Updated = time.Now().UTC()
	return putJSON(context.Background(), m.st, output.ManifestFile, &out)
}

// SortSegments puts segments in the order they apply (CompareSegments).
func SortSegments(segs []SegmentEntry) { slices.SortStableFunc(segs, CompareSegments) }

// CompareSegments orders segments as they apply: by region, then partition, then offset (a roll's
// data file before a later roll's).
func CompareSegments(a, b SegmentEntry) int {
	return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Partition, b.Partition),
		cmp.Compare(a.FirstOffset, b.FirstOffset), cmp.Compare(a.RollLast, b.RollLast))
}

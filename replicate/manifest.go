package replicate

import (
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
)

// Manifest is manifest.json of a replication output: sink/lindorm's manifest (regions with
// their data files, totals) plus a "replication" section listing every segment in the order to
// apply them. It is rewritten atomically after each roll; readers of the lindorm manifest see
// the data files and ignore the extra section.
type Manifest struct {
	lindorm.Manifest
	Replication Replication `json:"replication"`
}

// Replication describes the stream and its segments.
type Replication struct {
	Topic  string `json:"topic"`
	Group  string `json:"group"`
	Format string `json:"message_format"`
	// Segments in the order to apply them within a region: by partition, then first offset.
	// Each segment's data file goes through bulkload; then its delete file's statements run.
	// Segments of different partitions of a region are independent when every source row is
	// always sent to the same partition (Kafka key partitioning, as Debezium does).
	Segments []SegmentEntry `json:"segments"`
	Deletes  int64          `json:"delete_statements"`
	Updated  time.Time      `json:"updated_at"`
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

func (s SegmentEntry) paths() []string {
	var p []string
	if s.Data != nil {
		p = append(p, s.Data.Path)
	}
	if s.Deletes != nil {
		p = append(p, s.Deletes.Path)
	}
	return p
}

// DeleteFile is a file of DELETE statements.
type DeleteFile struct {
	Region int    `json:"-"`
	Path   string `json:"path"`
	Keys   int64  `json:"statements"`
	Bytes  int64  `json:"bytes"`
}

// manifest keeps the committed segments and writes manifest.json.
type manifest struct {
	mu   sync.Mutex
	dir  string
	base func() *lindorm.Manifest // a fresh lindorm manifest (schema, plan) to fill
	repl Replication
	segs map[string]SegmentEntry // by base name and region: a replay replaces, never duplicates
	// totals of earlier processes in this directory
	prevIn, prevWritten, prevRejected int64
}

func segKey(region, partition int, first, last int64) string {
	return fmt.Sprintf("%d/%s", region, SegmentName(partition, first, last))
}

// loadManifest reads an existing manifest.json of dir to continue it.
func loadManifest(dir string, base func() *lindorm.Manifest, repl Replication) (*manifest, error) {
	m := &manifest{dir: dir, base: base, repl: repl, segs: map[string]SegmentEntry{}}
	var old Manifest
	ok, err := pipeline.ReadJSON(filepath.Join(dir, lindorm.ManifestFile), "manifest", &old)
	if err != nil {
		return nil, err
	}
	if !ok {
		return m, nil
	}
	for _, s := range old.Replication.Segments {
		// the paths are carried into every manifest written from now on, which merge and the
		// bulk load follow: refuse one outside the output (issue 9, item 13)
		for _, p := range s.paths() {
			if err := pipeline.CheckRelPath(p); err != nil {
				return nil, fmt.Errorf("%s: segment %s: %w", filepath.Join(dir, lindorm.ManifestFile), SegmentName(s.Partition, s.FirstOffset, s.RollLast), err)
			}
		}
		m.segs[segKey(s.Region, s.Partition, s.FirstOffset, s.RollLast)] = s
	}
	m.prevIn, m.prevWritten, m.prevRejected = old.RowsIn, old.RowsWritten, old.RowsRejected
	return m, nil
}

// add records committed segments and rewrites manifest.json atomically.
func (m *manifest) add(segs []segmentFiles, in, written, rejected int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range segs {
		e := SegmentEntry{Region: s.Region, Partition: s.Partition, FirstOffset: s.First, RollLast: s.Last, Deletes: s.Deletes}
		if s.Data != nil {
			e.Data = &lindorm.FileEntry{Path: s.Data.Path, Rows: s.Data.Rows, Bytes: s.Data.Bytes}
		}
		m.segs[segKey(s.Region, s.Partition, s.First, s.Last)] = e
	}
	return m.write(in, written, rejected)
}

// write rewrites manifest.json; m.mu is held (or the manifest not shared yet).
func (m *manifest) write(in, written, rejected int64) error {
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
	sort.Slice(out.Replication.Segments, func(i, j int) bool {
		a, b := out.Replication.Segments[i], out.Replication.Segments[j]
		if a.Region != b.Region {
			return a.Region < b.Region
		}
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		if a.FirstOffset != b.FirstOffset {
			return a.FirstOffset < b.FirstOffset
		}
		return a.RollLast < b.RollLast
	})
	if err := out.AddFiles(infos); err != nil {
		return err
	}
	out.RowsIn = m.prevIn + in
	out.RowsWritten = m.prevWritten + written
	out.RowsRejected = m.prevRejected + rejected
	out.Replication.Updated = time.Now().UTC()
	return pipeline.WriteJSONAtomic(filepath.Join(m.dir, lindorm.ManifestFile), &out)
}

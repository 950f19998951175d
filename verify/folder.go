package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/formats"
	"github.com/rekey/rekey/store"
)

// Objects is what verify reads a rekey output through: every store.Store has these methods, so
// a local folder, S3 or OSS output is read the same way.
type Objects interface {
	// Get reads a whole object; a missing one wraps store.ErrNotExist.
	Get(ctx context.Context, name string) ([]byte, error)
	// Open gives random access to an object (a Parquet file's footer, then its row groups).
	Open(ctx context.Context, name string) (store.Reader, error)
	// List names the committed objects under a prefix (data/: what the bulk load reads).
	List(ctx context.Context, prefix string) ([]store.Info, error)
}

// Folder is a rekey output to verify: the data files its manifest (or, for a run that has not
// finished, its checkpoint) lists, then those under data/ that the manifest does not list.
type Folder struct {
	Objects  Objects
	Location string // for messages
	Format   string // parquet or csv
	Files    []pipeline.FileInfo
	// Unlisted is how many of Files, at the end, are under data/ without being listed (their
	// Rows -1): the bulk load reads them all the same, so their rows are target rows (a copy of
	// a listed file shows as extra).
	Unlisted int
	Rows     int64 // rows the listed files hold, as listed
	// Replication is the replication section of the manifest of a replicate output: Files
	// are then its segments' files in the order they apply, Deletes[i] telling a delete file.
	Replication *replicate.Replication
	Deletes     []bool
	Notes       []string // what the reader of the result should know (an unfinished run...)
	// listing is the file that lists Files: manifest.json, or checkpoint.json for a run that
	// has not finished (whose resume removes the files it does not list)
	listing string
}

// OpenFolder reads an output's manifest.json, or its checkpoint.json when the run has not
// written a manifest yet, and checks that it holds the mapping's table: the same columns, types
// and primary key. It never writes anything.
func OpenFolder(ctx context.Context, objs Objects, location string, schema pipeline.TargetSchema, fingerprint string) (*Folder, error) {
	// a replicate running meanwhile commits rolls: it writes manifest.json, then gives the roll's
	// files their names under data/, so files the manifest read first does not list may be
	// those of a roll committed since, which the manifest now lists: read it again
	for attempt := 1; ; attempt++ {
		f, manifest, err := openFolder(ctx, objs, location, schema, fingerprint)
		if err != nil || f.Replication == nil || f.Unlisted == 0 || attempt == maxOpenAttempts {
			return f, err
		}
		again, err := objs.Get(ctx, output.ManifestFile)
		if err != nil {
			return nil, fmt.Errorf("%s: read %s again: %w", location, output.ManifestFile, err)
		}
		if bytes.Equal(again, manifest) {
			return f, nil // the files are not listed indeed
		}
	}
}

// maxOpenAttempts bounds the reads of a replicate output's manifest and listing that disagree
// because replicate committed a roll in between.
const maxOpenAttempts = 3

// openFolder is one read of the output's listing (manifest.json, whose bytes it returns, or
// checkpoint.json) and of the data files under data/.
func openFolder(ctx context.Context, objs Objects, location string, schema pipeline.TargetSchema, fingerprint string) (*Folder, []byte, error) {
	f := &Folder{Objects: objs, Location: location}
	data, err := objs.Get(ctx, output.ManifestFile)
	switch {
	case err == nil:
		err = f.readManifest(data, schema, fingerprint)
	case store.IsNotExist(err):
		data, err = nil, f.readCheckpoint(ctx, fingerprint)
	default:
		err = fmt.Errorf("%s: read %s: %w", location, output.ManifestFile, err)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := f.checkLoaded(); err != nil {
		return nil, nil, err
	}
	if f.Format == "" {
		f.Format = formats.Default()
	}
	if _, err := folderFormat(f); err != nil {
		return nil, nil, err
	}
	if err := f.addUnlisted(ctx); err != nil {
		return nil, nil, err
	}
	return f, data, nil
}

// readManifest takes the files a finished output's manifest (data) lists, or a replication's.
func (f *Folder) readManifest(data []byte, schema pipeline.TargetSchema, fingerprint string) error {
	location := f.Location
	var m output.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("%s: %s is damaged: %w", location, output.ManifestFile, err)
	}
	if err := output.CheckManifestPaths(&m); err != nil {
		return fmt.Errorf("%s: %s: %w", location, output.ManifestFile, err)
	}
	if err := checkManifestSchema(&m, schema); err != nil {
		return fmt.Errorf("%s does not hold the mapping's table: %w; verify it with the mapping it was migrated with", location, err)
	}
	if fingerprint != "" && m.MappingFingerprint != "" && m.MappingFingerprint != fingerprint {
		f.Notes = append(f.Notes, fmt.Sprintf("%s was written with another version of the mapping (fingerprint %.12s, this one %.12s): keys computed differently show as missing and extra", location, m.MappingFingerprint, fingerprint))
	}
	f.Format = m.Format
	var rm struct {
		Replication *replicate.Replication `json:"replication"`
	}
	if err := json.Unmarshal(data, &rm); err != nil {
		return fmt.Errorf("%s: %s is damaged: %w", location, output.ManifestFile, err)
	}
	if f.Replication = rm.Replication; f.Replication != nil {
		var err error
		if f.Files, f.Deletes, f.Rows, err = replicationFiles(location, f.Replication); err != nil {
			return err
		}
		var rejected int64
		for _, p := range f.Replication.Partitions {
			rejected += p.Rejected
		}
		if rejected > 0 {
			f.Notes = append(f.Notes, fmt.Sprintf("replicate rejected %d messages of %s (%s counts them, %s/ names each): their changes are not in it",
				rejected, location, output.ManifestFile, output.RejectsDir))
		}
		return nil
	}
	for _, r := range m.Regions {
		for _, fe := range r.Files {
			f.Files = append(f.Files, pipeline.FileInfo{Region: r.Index, Path: fe.Path, Rows: fe.Rows, Bytes: fe.Bytes})
			f.Rows += fe.Rows
		}
	}
	return nil
}

// readCheckpoint takes the files the checkpoint of an output without a manifest lists: a run
// that has not finished.
func (f *Folder) readCheckpoint(ctx context.Context, fingerprint string) error {
	location := f.Location
	data, err := f.Objects.Get(ctx, output.CheckpointFile)
	if store.IsNotExist(err) {
		return notAnOutput(ctx, f.Objects, location)
	} else if err != nil {
		return fmt.Errorf("%s: read %s: %w", location, output.CheckpointFile, err)
	}
	cp, err := output.ParseCheckpoint(data)
	if err != nil {
		return fmt.Errorf("%s: %s is damaged: %w", location, output.CheckpointFile, err)
	}
	for _, fi := range cp.Files {
		f.Rows += fi.Rows
	}
	if cp.Fingerprint != "" && fingerprint != "" && cp.Fingerprint != fingerprint {
		return fmt.Errorf("%s holds a run of another mapping (fingerprint %.12s, this one %.12s); verify it with the mapping it was migrated with", location, cp.Fingerprint, fingerprint)
	}
	f.Format, f.Files, f.listing = cp.Format, cp.Files, output.CheckpointFile
	f.Notes = append(f.Notes, fmt.Sprintf("%s has no %s: its migration has not finished; verifying the %d files its checkpoint lists (finish it with migrate --resume)", location, output.ManifestFile, len(cp.Files)))
	return nil
}

// addUnlisted adds the data files the listing does not name but the bulk load would read, or,
// for an unfinished run, which its resume removes, notes them.
func (f *Folder) addUnlisted(ctx context.Context) error {
	unlisted, err := unlistedFiles(ctx, f.Objects, f.Files)
	if err != nil {
		return fmt.Errorf("%s: list %s/: %w", f.Location, output.DataDir, err)
	}
	switch {
	case len(unlisted) == 0:
	case f.listing == output.CheckpointFile:
		// an unfinished run: its resume removes the files its checkpoint does not list
		f.Notes = append(f.Notes, fmt.Sprintf("%s holds %d files under %s/ that its %s does not list (%s): not verified; migrate --resume removes them",
			f.Location, len(unlisted), output.DataDir, output.CheckpointFile, namesShort(unlisted)))
	default:
		for _, name := range unlisted {
			f.Files = append(f.Files, pipeline.FileInfo{Region: -1, Path: name, Rows: -1})
			if f.Deletes != nil { // a replicate output's: a data file, read after its segments
				f.Deletes = append(f.Deletes, false)
			}
		}
		f.Unlisted = len(unlisted)
	}
	return nil
}

// checkLoaded refuses a listed data file that the bulk load does not read: its rows would never
// reach the table, so reading them as target rows would verify what the table does not get.
func (f *Folder) checkLoaded() error {
	for i, fi := range f.Files {
		if f.Deletes != nil && f.Deletes[i] {
			continue // a replication's delete file, beside data/
		}
		if why := notLoaded(fi.Path); why != "" {
			return fmt.Errorf("%s: %s lists %s, which the bulk load does not read (%s): its rows would not reach the table; was the file renamed or moved, and %s edited? put the file back where the run wrote it, or migrate again into a new --out",
				f.Location, listedIn(f), fi.Path, why, listedIn(f))
		}
	}
	return nil
}

// notLoaded says why the bulk load does not read a data file at path, "" when it does: its job
// reads the files directly inside each region folder (data/*/, sink/lindorm.RegionGlob) and
// skips names starting with _ or .
func notLoaded(path string) string {
	if sparkSkips(path) {
		return "it skips names starting with _ or ."
	}
	if _, base, ok := strings.Cut(strings.TrimPrefix(path, output.DataDir+"/"), "/"); !ok || strings.Contains(base, "/") {
		return "it reads the files directly inside each region folder, " + output.DataDir + "/*/"
	}
	return ""
}

// staged tells whether name is a file of a replication's committed roll that its manifest lists
// with the rename still to do (a kill came between the two), and the roll's partition.
func (f *Folder) staged(name string) (partition int, ok bool) {
	if f.Replication == nil {
		return 0, false
	}
	for _, p := range f.Replication.Partitions {
		for _, s := range p.Staged {
			if s.Name == name {
				return p.Partition, true
			}
		}
	}
	return 0, false
}

// notAnOutput says why a folder without a manifest or checkpoint cannot be verified: the shards
// of a migration writing it together (--shared-out) are finished by a merge, which writes its
// manifest.
func notAnOutput(ctx context.Context, objs Objects, location string) error {
	shards, err := objs.List(ctx, output.ShardsDir+"/")
	if err == nil && len(shards) > 0 {
		return fmt.Errorf("%s holds the shards of a migration written together (%s/) and no %s yet: once every shard has run, finish it with rekey merge --out %s, then verify it",
			location, output.ShardsDir, output.ManifestFile, location)
	}
	return fmt.Errorf("%s is not a rekey output: it has neither %s nor %s", location, output.ManifestFile, output.CheckpointFile)
}

// unlistedFiles lists the data files under data/ that listed does not name and that the bulk
// load reads: Spark reads every file under its path except names starting with _ or . (at any
// depth).
func unlistedFiles(ctx context.Context, objs Objects, listed []pipeline.FileInfo) ([]string, error) {
	all, err := objs.List(ctx, output.DataDir+"/")
	if err != nil {
		return nil, err
	}
	known := make(map[string]bool, len(listed))
	for _, fi := range listed {
		known[fi.Path] = true
	}
	var out []string
	for _, o := range all {
		if !known[o.Name] && !sparkSkips(o.Name) {
			out = append(out, o.Name)
		}
	}
	return out, nil
}

// sparkSkips tells whether Spark's file listing passes over the object (a name in its path
// starts with _ or .: _SUCCESS, .crc files, hidden folders).
func sparkSkips(name string) bool {
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, "_") || strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

// namesShort names the first few of names and how many more there are.
func namesShort(names []string) string {
	const show = 3
	if len(names) <= show {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:show], ", "), len(names)-show)
}

// checkManifestSchema names the first difference between the manifest's table and schema.
func checkManifestSchema(m *output.Manifest, schema pipeline.TargetSchema) error {
	var want []string
	for _, c := range schema.Columns {
		key := ""
		if c.IsKey() {
			key = " (key)"
		}
		want = append(want, c.Name+" "+c.SQLType()+key)
	}
	var got []string
	for _, c := range m.Columns {
		key := ""
		if c.Key {
			key = " (key)"
		}
		got = append(got, c.Name+" "+c.Type+key)
	}
	if m.Table != schema.Table {
		return fmt.Errorf("it holds table %s, the mapping writes %s", m.Table, schema.Table)
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		return fmt.Errorf("its columns are [%s], the mapping's are [%s]", strings.Join(got, ", "), strings.Join(want, ", "))
	}
	for i, k := range m.KeyColumns {
		if i >= schema.KeyLen || k.Name != schema.Columns[i].Name || k.Desc != schema.Columns[i].Desc {
			return fmt.Errorf("its primary key differs from the mapping's at column %d (%s)", i+1, k.Name)
		}
	}
	return nil
}

// targetWhere names a target row by its ord (file index << 32 | row in the file, from 0, or
// for a CSV file its line, from 1).
func (v *run) targetWhere(ord uint64) string {
	if v.cfg.Folder == nil {
		return "the table, read by key range"
	}
	files := v.cfg.Folder.Files
	if i := int(ord >> 32); i < len(files) {
		if f, err := folderFormat(v.cfg.Folder); err == nil {
			return f.RowName(files[i].Path, int64(ord&(1<<32-1)))
		}
	}
	return fmt.Sprintf("row %d", ord)
}

// readFolder reads the given data files of the output, a few at a time, into dst's buckets by
// key hash; keys hashing above max are passed over.
func (v *run) readFolder(ctx context.Context, files []int, dst *parts, c *pipeline.Counters, max uint64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < v.cfg.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bw := dst.writer()
			t := &targetReader{v: v, c: c}
			var rec, state []byte
			t.put = func(file int, row int64) {
				h, k2 := keyHashes(t.key)
				if v.state && !t.deletes { // an upsert of the whole row
					state = append(append(state[:0], stateUpsert), t.row...)
					t.row, state = state, t.row
				}
				switch {
				case h > max || (v.only != nil && !has(v.only, h)):
				case v.digests:
					rec = targetDigest(rec[:0], h, k2, t.row)
					bw.addRecord(h, rec)
				default:
					bw.add(h, targetOrd(file, row), t.key, t.row)
				}
			}
			for i := range jobs {
				if ctx.Err() != nil {
					continue
				}
				if err := t.file(ctx, i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
				}
			}
			bw.flush()
		}()
	}
	for _, i := range files {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	v.cfg.Logger.Info("target read", zap.Int64("rows", c.RowsIn.Load()), zap.Int("files", len(files)))
	return dst.failed()
}

// targetOrd places a target row: its file's index in the Folder and its row in the file.
func targetOrd(file int, row int64) uint64 { return uint64(file)<<32 | uint64(row) }

// targetReader reads target files a row at a time: for each row it encodes the key and the row
// into key and row and calls put, which files or matches them.
type targetReader struct {
	v        *run
	c        *pipeline.Counters
	key, row []byte
	keyLen   int // the schema's key columns, which Read sends first
	put      func(file int, row int64)
	deletes  bool  // reading a delete file
	fileIdx  int   // the file being read
	unsent   int64 // rows read that the progress counter does not count yet
}

func (t *targetReader) file(ctx context.Context, i int) error {
	fo := t.v.cfg.Folder
	fi := fo.Files[i]
	r, err := fo.Objects.Open(ctx, fi.Path)
	if err != nil {
		if store.IsNotExist(err) {
			if p, ok := fo.staged(fi.Path); ok {
				return fmt.Errorf("%s lists %s, which is still under its temporary name: rekey replicate was stopped while it committed the roll of partition %d that holds it; run rekey replicate again (the partition's next owner renames the roll's files first), then verify",
					fo.Location, fi.Path, p)
			}
			again := "migrate again (--overwrite, or a new --out)"
			if fo.Replication != nil {
				again = "replicate the topic again from its start into a new --out (a new group=)"
			}
			return fmt.Errorf("%s lists %s, which is not there, so what the target holds cannot be told: give --target the output as the run left it (moved or copied whole); if the file is lost, %s", fo.Location, fi.Path, again)
		}
		return fmt.Errorf("open %s: %w", fi.Path, err)
	}
	defer r.Close()
	var n int64
	t.deletes = fo.Deletes != nil && fo.Deletes[i]
	if t.deletes {
		n, err = t.readDeletes(ctx, i)
	} else {
		n, err = t.readData(ctx, r, i)
	}
	unlisted := i >= len(fo.Files)-fo.Unlisted
	if err != nil {
		if unlisted {
			return fmt.Errorf("read %s, which %s does not list but the bulk load would read (it reads every file under %s/): %w; remove it or move it out of %s/",
				fi.Path, listedIn(fo), output.DataDir, err, output.DataDir)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("read %s: %w", fi.Path, err)
		}
		return fmt.Errorf("read %s: %w; a file damaged or cut short (a copy that did not finish) fails the bulk load too: "+
			"copy it again from where the run wrote it, or run the migration again into a new --out, then verify again", fi.Path, err)
	}
	switch {
	case unlisted:
		t.v.fileProblem(FileRows{Path: fi.Path, Rows: n, Unlisted: true})
	case n != fi.Rows: // the comparison shows what changed in the rows; this says where
		listed := fi.Rows
		t.v.fileProblem(FileRows{Path: fi.Path, Rows: n, ListedRows: &listed})
	}
	return nil
}

// readData reads data file i through its format.
func (t *targetReader) readData(ctx context.Context, r store.Reader, i int) (int64, error) {
	f, err := folderFormat(t.v.cfg.Folder)
	if err != nil {
		return 0, err
	}
	t.fileIdx, t.keyLen = i, t.v.schema.KeyLen
	t.key, t.row = t.key[:0], t.row[:0]
	defer t.flushCount()
	return f.Read(ctx, r, r.Size(), t.v.schema, t)
}

// fileProblem records a data file that the listing does not account for.
func (v *run) fileProblem(f FileRows) {
	v.notesMu.Lock()
	v.res.Files = append(v.res.Files, f)
	v.notesMu.Unlock()
}

// listedIn is the file that lists the folder's data files.
func listedIn(fo *Folder) string {
	if fo.listing == "" {
		return output.ManifestFile
	}
	return fo.listing
}

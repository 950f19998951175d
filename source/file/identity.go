package file

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rekey/rekey/pipeline"
)

var (
	_ pipeline.Identifier      = (*Source)(nil)
	_ pipeline.Identifier      = (*Files)(nil)
	_ pipeline.Identifier      = (*Stdin)(nil)
	_ pipeline.IdentityAdopter = (*Stdin)(nil)
)

// Identity names the file by absolute path, size and modification time: a resume of another
// file, or of the same name with other content, is refused instead of continuing mid-line. How it
// is read (a format=, CSV options) is part of it: another dialect would cut other records.
func (s *Source) Identity() pipeline.Identity {
	if o := s.cfg.Object; o != nil {
		// An object is named by its location, and its content by size and ETag (a bucket keeps
		// no modification time that a rewrite with the same bytes would not change).
		id := pipeline.Identity{"file": o.Store.Location(o.Info.Name), "max_record_size": strconv.Itoa(s.cfg.MaxRecordSize),
			"size": strconv.FormatInt(o.Info.Size, 10), "etag": o.Info.ETag}
		addReadOptions(id, s.cfg.Format, s.cfg.CSV)
		s.addPart(id, "")
		return id
	}
	path, err := filepath.Abs(s.cfg.Path)
	if err != nil {
		path = s.cfg.Path
	}
	// The record size limit decides where a stray quote's record ends: a resume with another
	// one could cut the rest of the file differently from the first run.
	id := pipeline.Identity{"file": path, "max_record_size": strconv.Itoa(s.cfg.MaxRecordSize)}
	id["size"], id["modified"] = statIdentity(s.cfg.Path)
	addReadOptions(id, s.cfg.Format, s.cfg.CSV)
	s.addPart(id, "")
	return id
}

// addPart records a part's byte range under prefix+"range": another split would read other rows,
// and merge checks that no two shards read the same bytes.
func (s *Source) addPart(id pipeline.Identity, prefix string) {
	if s.parted {
		id[prefix+"range"] = s.claimed()
	}
}

// statIdentity is a file's size and modification time, "unknown" when it cannot be read.
func statIdentity(path string) (size, modified string) {
	st, err := os.Stat(path)
	if err != nil {
		return "unknown", "unknown"
	}
	return strconv.FormatInt(st.Size(), 10), st.ModTime().UTC().Format(time.RFC3339Nano)
}

// addReadOptions records the options that change what is read, when set (a run without them
// keeps the identity it always had).
func addReadOptions(id pipeline.Identity, format string, csv CSVOptions) {
	if format != "" {
		id["format"] = format
	}
	if o := csv.String(); o != "" {
		id["csv"] = o
	}
}

// addWindow records ?skip= and ?limit=: a resume with another window would read other rows.
func (f *Files) addWindow(id pipeline.Identity) {
	if f.skip > 0 {
		id["skip"] = strconv.FormatInt(f.skip, 10)
	}
	if f.limit > 0 {
		id["limit"] = strconv.FormatInt(f.limit, 10)
	}
}

// Identity of one file named as such is the file's; of several (a directory, a glob, a list) it
// is their directory, their count and each one's size and modification time under its stream
// name (file[output-000001.csv].size), so that a resume with a file added, removed or changed is
// refused naming it. A file read in parts also has its part's byte range (file[orders.jsonl].range).
func (f *Files) Identity() pipeline.Identity {
	if f.single {
		id := f.files[0].Identity()
		f.addWindow(id)
		return id
	}
	id := pipeline.Identity{"dir": f.dir, "files": strconv.Itoa(len(f.files)),
		"max_record_size": strconv.Itoa(f.files[0].cfg.MaxRecordSize)}
	if !f.shard.Whole() {
		id["shard"] = f.shard.String()
		if f.input != "" {
			id["input"] = f.input
		}
	}
	for _, s := range f.files {
		key := "file[" + s.name + "]."
		s.addPart(id, key)
		if o := s.cfg.Object; o != nil {
			id[key+"size"], id[key+"etag"] = strconv.FormatInt(o.Info.Size, 10), o.Info.ETag
			continue
		}
		id[key+"size"], id[key+"modified"] = statIdentity(s.cfg.Path)
	}
	addReadOptions(id, f.format, f.csv)
	f.addWindow(id)
	return id
}

// AdoptIdentity resumes a shard whose checkpoint an earlier rekey wrote, before shards recorded
// the whole input they split ("input"): its own files are still compared one by one.
func (f *Files) AdoptIdentity(recorded pipeline.Identity) error {
	if _, ok := recorded["input"]; !ok && recorded["shard"] == f.shard.String() {
		f.input = ""
	}
	return nil
}

// Identity of stdin says only that: it cannot be resumed (AdoptIdentity refuses), so this is what
// tells a later resume with a file that the run read something else.
func (s *Stdin) Identity() pipeline.Identity {
	id := pipeline.Identity{"input": "stdin", "max_record_size": strconv.Itoa(s.f.files[0].cfg.MaxRecordSize)}
	addReadOptions(id, s.f.format, s.f.csv)
	s.f.addWindow(id)
	return id
}

// ErrStdinResume refuses --resume with stdin: what the interrupted run read from it is gone, and
// what stdin holds now cannot be matched to where it stopped.
var ErrStdinResume = errors.New("a run reading stdin (file:-) cannot be resumed: what the interrupted run read from it is gone, " +
	"and where it stopped cannot be found in new input; start over in a new --out directory, " +
	"or save the input to a file and migrate that (a file can be resumed)")

// AdoptIdentity refuses every resume: see ErrStdinResume.
func (s *Stdin) AdoptIdentity(pipeline.Identity) error { return ErrStdinResume }

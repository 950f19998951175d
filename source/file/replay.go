package file

import (
	"bytes"
	"encoding/csv"

	"github.com/rekey/rekey/pipeline"
)

var (
	_ pipeline.Replayer = (*Source)(nil)
	_ pipeline.Replayer = (*Files)(nil)
)

// ReplayFile is rejected-rows.csv (.tsv for tab-separated input), under the input's header, or
// rejected-rows.jsonl: every rejected record as it was read (bytes included that were not UTF-8),
// so that once the cause is fixed `rekey migrate --source file:OUT/rejected-rows.csv` runs those
// rows again. The lines keep the input's dialect: read the file with the same CSV parameters.
func (s *Source) ReplayFile() (pipeline.ReplayFile, bool) {
	if s.format == formatJSONL {
		return pipeline.ReplayFile{Ext: "jsonl"}, true
	}
	rf := pipeline.ReplayFile{Ext: "csv"}
	if s.csv.delim == '\t' {
		rf.Ext = "tsv"
	}
	if !s.csv.header {
		return rf, true
	}
	if s.csv.quote != '"' {
		return rf, false // encoding/csv writes only '"' quotes: the header could not be written back as read
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Comma = rune(s.csv.delim)
	if err := w.Write(s.header); err != nil {
		return rf, false
	}
	w.Flush()
	rf.Header = b.String()
	return rf, true
}

// ReplayFile is the files' common replay file: they must agree on the format, the dialect and the
// header, or their rejected lines could not be read back as one file.
func (f *Files) ReplayFile() (pipeline.ReplayFile, bool) {
	var rf pipeline.ReplayFile
	for i, s := range f.files {
		if s.empty {
			continue
		}
		r, ok := s.ReplayFile()
		if !ok || (i > 0 && rf.Ext != "" && r != rf) {
			return pipeline.ReplayFile{}, false
		}
		rf = r
	}
	return rf, rf.Ext != ""
}

// ReplayFile is the replay file of the input read from stdin.
func (s *Stdin) ReplayFile() (pipeline.ReplayFile, bool) { return s.f.ReplayFile() }

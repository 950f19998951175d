package file

import (
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rekey/rekey/pipeline"
)

var _ pipeline.Identifier = (*Source)(nil)

// Identity names the file by absolute path, size and modification time: a resume of another
// file, or of the same name with other content, is refused instead of continuing mid-line.
func (s *Source) Identity() pipeline.Identity {
	path, err := filepath.Abs(s.cfg.Path)
	if err != nil {
		path = s.cfg.Path
	}
	// The record size limit decides where a stray quote's record ends: a resume with another
	// one could cut the rest of the file differently from the first run.
	id := pipeline.Identity{"file": path, "size": "unknown", "modified": "unknown",
		"max_record_size": strconv.Itoa(s.cfg.MaxRecordSize)}
	if st, err := os.Stat(s.cfg.Path); err == nil {
		id["size"] = strconv.FormatInt(st.Size(), 10)
		id["modified"] = st.ModTime().UTC().Format(time.RFC3339Nano)
	}
	return id
}

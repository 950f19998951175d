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
	id := pipeline.Identity{"file": path, "size": "unknown", "modified": "unknown"}
	if st, err := os.Stat(s.cfg.Path); err == nil {
		id["size"] = strconv.FormatInt(st.Size(), 10)
		id["modified"] = st.ModTime().UTC().Format(time.RFC3339Nano)
	}
	return id
}

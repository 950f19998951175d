package file

import (
	"bytes"
	"encoding/csv"

	"github.com/rekey/rekey/pipeline"
)

var _ pipeline.Replayer = (*Source)(nil)

// ReplayFile is rejected-rows.csv, under the input's header, or rejected-rows.jsonl: every
// rejected record as it was read (bytes included that were not UTF-8), so that once the cause is
// fixed `rekey migrate --source file:OUT/rejected-rows.csv` runs those rows again.
func (s *Source) ReplayFile() (pipeline.ReplayFile, bool) {
	if s.format == formatJSONL {
		return pipeline.ReplayFile{Name: pipeline.ReplayPrefix + "jsonl"}, true
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(s.header); err != nil {
		return pipeline.ReplayFile{}, false
	}
	w.Flush()
	return pipeline.ReplayFile{Name: pipeline.ReplayPrefix + "csv", Header: b.String()}, true
}

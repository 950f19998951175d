package file

import (
	"strings"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cqlvalue"
)

// parseJSONRow parses the JSON Lines record at data[pos:] into vals. A missing member is null;
// members the schema does not declare are ignored.
func (s *Source) parseJSONRow(data string, pos int, vals []pipeline.Value) (next, nl int, blank bool, rerr *pipeline.RowError) {
	line := data[pos:]
	next = len(data)
	if k := strings.IndexByte(line, '\n'); k >= 0 {
		line = line[:k]
		next, nl = pos+k+1, 1
	}
	if strings.TrimSpace(line) == "" {
		return next, nl, true, nil
	}
	err := cqlvalue.ObjectFields(line, func(key, raw string) {
		ci := s.jsonColumn(key)
		if ci < 0 {
			return
		}
		v, err := s.types[ci].FromJSON(raw)
		if err != nil {
			if rerr == nil {
				rerr = &pipeline.RowError{Code: cqlvalue.ErrorCode(err), Field: s.names[ci], Message: err.Error()}
			}
			return
		}
		vals[ci] = v
	})
	if err != nil {
		rerr = &pipeline.RowError{Code: pipeline.CodeParse, Message: "invalid JSON: " + err.Error()}
	}
	return next, nl, false, rerr
}

func (s *Source) jsonColumn(key string) int {
	if s.jsonIndex != nil {
		if ci, ok := s.jsonIndex[key]; ok {
			return ci
		}
		return -1
	}
	for i, n := range s.names {
		if n == key {
			return i
		}
	}
	return -1
}

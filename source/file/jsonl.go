package file

import (
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cqlvalue"
)

// WriteTimesMember is the JSON Lines member that holds a row's cell write times, an object of
// column name to epoch milliseconds ({"a": 1700000000123}), as verify --repair writes them for a
// mapping with target.write_time; a source read with Config.CellWriteTimes gives them as
// Record.Times. A column without a time there (a key column) has none (0), as a Cassandra
// table's key columns have none.
const WriteTimesMember = "_rekey_write_times"

// CodeNoWriteTime rejects a row of a source read with Config.CellWriteTimes that carries no
// valid WriteTimesMember.
const CodeNoWriteTime = "no_write_time"

// parseJSONRow parses the JSON Lines record at data[pos:] into vals. A missing member is null;
// members the schema does not declare are ignored. With times (Config.CellWriteTimes) the row's
// WriteTimesMember fills times, and a row without it is rejected.
func (s *Source) parseJSONRow(data string, pos int, vals []pipeline.Value, times []int64) (next, nl int, blank bool, rerr *pipeline.RowError) {
	line := data[pos:]
	next = len(data)
	if k := strings.IndexByte(line, '\n'); k >= 0 {
		line = line[:k]
		next, nl = pos+k+1, 1
	}
	if strings.TrimSpace(line) == "" {
		return next, nl, true, nil
	}
	timed := false
	// members that name a column only ignoring case are read after the row's exact ones, which
	// win: exact records those, once the source has met such a member (track)
	var exact cqlvalue.FoldSeen
	// the columns a member of the row named (of the first MaxFolded): a second one is a guess
	// between two values, as a CSV header naming a column twice is
	var named cqlvalue.FoldSeen
	var foldBuf [2]cqlvalue.Folded
	folded, track, again := foldBuf[:0], s.trackExact.Load(), false
	member := func(key, raw string, sc cqlvalue.Scanned) {
		if times != nil && key == WriteTimesMember {
			timed = true
			if e := s.parseWriteTimes(raw, times); e != nil && rerr == nil {
				rerr = e
			}
			return
		}
		ci := s.jsonColumn(key)
		if ci < 0 {
			if ci = s.folds.Column(key); ci >= 0 && !again {
				folded = append(folded, cqlvalue.Folded{Name: key, Raw: raw, Scanned: sc, Column: ci})
			}
			return
		}
		if track {
			exact.Mark(ci)
		}
		if named.Has(ci) {
			if rerr == nil {
				rerr = cqlvalue.NamedTwice(s.names[ci], "fix the row where it was written")
			}
			return
		}
		named.Mark(ci)
		v, err := s.types[ci].FromScanned(raw, sc)
		if err != nil {
			if rerr == nil {
				rerr = &pipeline.RowError{Code: cqlvalue.ErrorCode(err), Field: s.names[ci], Message: err.Error()}
			}
			return
		}
		vals[ci] = v
	}
	err := cqlvalue.ObjectMembers(line, member)
	if err == nil && len(folded) > 0 {
		again = true
		if !track {
			// the first such member the source meets: exact members were not recorded, so the
			// row is read again, recording them
			s.trackExact.Store(true)
			track = true
			clear(vals)
			rerr, named = nil, cqlvalue.FoldSeen{}
			cqlvalue.ObjectMembers(line, member) // read once without an error
		}
		exactOnly := exact // the folded members read next mark theirs too
		for _, f := range folded {
			if !exactOnly.Has(f.Column) { // the row's exact member, even null, wins
				member(s.names[f.Column], f.Raw, f.Scanned)
				s.warnFolded(f.Name, f.Column)
			}
		}
	}
	if err != nil {
		rerr = &pipeline.RowError{Code: pipeline.CodeParse, Message: "invalid JSON: " + err.Error()}
	} else if times != nil && !timed && rerr == nil {
		rerr = &pipeline.RowError{Code: CodeNoWriteTime, Field: WriteTimesMember, Message: "the row has no " + strconv.Quote(WriteTimesMember) +
			" member (its cells' write times, epoch ms), which the mapping's target.write_time needs: read the table itself (cassandra://), or drop target.write_time"}
	}
	return next, nl, false, rerr
}

// warnFolded says once per member name that a member naming a column only ignoring case is read
// as that column.
func (s *Source) warnFolded(member string, ci int) {
	if _, seen := s.foldWarned.Load(member); seen {
		return
	}
	if _, seen := s.foldWarned.LoadOrStore(strings.Clone(member), true); !seen { // member aliases the read buffer
		s.log.Warn("a JSON member that names a declared column only ignoring case is read as that column (a member of its exact name wins)",
			zap.String("file", s.cfg.Path), zap.String("member", member), zap.String("column", s.names[ci]))
	}
}

// parseWriteTimes reads a WriteTimesMember object into times: a declared column's write time in
// epoch milliseconds, a positive integer.
func (s *Source) parseWriteTimes(raw string, times []int64) *pipeline.RowError {
	var rerr *pipeline.RowError
	err := cqlvalue.ObjectFields(raw, func(key, v string) {
		ci := s.jsonColumn(key)
		ms, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case rerr != nil:
		case ci < 0:
			rerr = &pipeline.RowError{Code: CodeNoWriteTime, Field: WriteTimesMember, Message: "a write time for " + strconv.Quote(key) + ", which the mapping's source does not declare"}
		case perr != nil || ms <= 0:
			rerr = &pipeline.RowError{Code: CodeNoWriteTime, Field: s.names[ci], Message: "write time " + v + " of " + strconv.Quote(key) + " is not a positive integer of epoch milliseconds"}
		default:
			times[ci] = ms
		}
	})
	if err != nil {
		return &pipeline.RowError{Code: CodeNoWriteTime, Field: WriteTimesMember, Message: strconv.Quote(WriteTimesMember) + " is not an object of column write times: " + err.Error()}
	}
	return rerr
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

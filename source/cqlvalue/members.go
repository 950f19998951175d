package cqlvalue

import (
	"strconv"
	"strings"

	"github.com/rekey/rekey/pipeline"
)

// FoldIndex finds the column a JSON member names ignoring case, for a member no column names
// exactly: a producer's "userId" for the mapping's userid (Cassandra folds unquoted names to lower
// case, JSON producers often write camelCase). CSV headers are matched the same way. A name that
// two columns share ignoring case finds none.
type FoldIndex map[string]int

// Folded is a member of a JSON row that names a column only ignoring case, kept until the row's
// end: a member of the column's exact name, anywhere in the row, wins.
type Folded struct {
	Name, Raw string
	Scanned   Scanned
	Column    int
}

// MaxFolded is the number of leading columns a member may name ignoring case: a row tracks which
// of them an exact member named (FoldSeen), since an exact member wins over a folded one.
const MaxFolded = 256

// FoldSeen records the columns (of the first MaxFolded) that members named exactly in one row.
type FoldSeen [MaxFolded / 64]uint64

// Mark records that a member named column ci exactly.
func (s *FoldSeen) Mark(ci int) {
	if ci < MaxFolded {
		s[ci>>6] |= 1 << (ci & 63)
	}
}

// Has tells whether a member named column ci exactly.
func (s *FoldSeen) Has(ci int) bool { return ci < MaxFolded && s[ci>>6]&(1<<(ci&63)) != 0 }

// NewFoldIndex indexes the columns' names ignoring case.
func NewFoldIndex(names []string) FoldIndex {
	f := make(FoldIndex, len(names))
	for i, n := range names {
		if i >= MaxFolded {
			break
		}
		k := strings.ToLower(n)
		if _, twice := f[k]; twice {
			f[k] = -1
			continue
		}
		f[k] = i
	}
	return f
}

// Column is the column member names ignoring case, or -1.
func (f FoldIndex) Column(member string) int {
	var buf [64]byte
	key := member
	if len(member) <= len(buf) {
		b := buf[:len(member)]
		for i := range len(member) {
			c := member[i]
			if c >= 0x80 { // not ASCII: ToLower folds it
				b = nil
				break
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b[i] = c
		}
		if b != nil {
			if ci, ok := f[string(b)]; ok {
				return ci
			}
			return -1
		}
	}
	key = strings.ToLower(key)
	if ci, ok := f[key]; ok {
		return ci
	}
	return -1
}

// NamedTwice is the reject of a row whose members name column name twice (exactly, or ignoring
// case): which value is meant would be a guess. fix says where to fix it.
func NamedTwice(name, fix string) *pipeline.RowError {
	return &pipeline.RowError{Code: pipeline.CodeParse, Field: name,
		Message: "the row names " + strconv.Quote(name) + " twice: which value is meant would be a guess; " + fix}
}

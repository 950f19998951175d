package report

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// The advisor's hash prefix of a VARBINARY first column is a key column of its own before the
// blob ([md5(b).substr(0,4) AS rk_hash][b]), which keeps every row; md5(b).substr(0,4) + b made
// VARCHAR of the blob's bytes and rejected every row whose bytes are not UTF-8 (72% of a table
// of increasing 8-byte ids), so the design graded poor and the hotspotting key ranked first.
// reverse(b), text too, is not offered for a blob.
func TestAdvisorHashPrefixKeepsABinaryKey(t *testing.T) {
	rep := runReport(t, `
version: 1
source:
  name: ks.t
  columns: {b: blob, v: text}
target:
  table: t
  primary_key: "[b]"
`, &memSource{n: 3000, make: func(i int) []pipeline.Value {
		var id [8]byte
		binary.BigEndian.PutUint64(id[:], uint64(1000000+i*977))
		return []pipeline.Value{pipeline.Bytes(string(id[:])), pipeline.Text("v")}
	}}, nil)
	var found bool
	for _, a := range rep.Alternatives {
		switch a.ID {
		case "hash_prefix":
			found = true
			if a.PrimaryKey != "[md5(b).substr(0, 4) AS rk_hash][b]" || a.LostRows != 0 || a.Grade == "poor" {
				t.Errorf("hash prefix design %s: lost %d, grade %s; want [md5(b).substr(0, 4) AS rk_hash][b], nothing lost", a.PrimaryKey, a.LostRows, a.Grade)
			}
		case "reverse":
			t.Errorf("reverse design offered for a blob: %s (lost %d)", a.PrimaryKey, a.LostRows)
		}
		if strings.Contains(a.PrimaryKey, "+ b") {
			t.Errorf("design %s makes text of the blob: %s", a.ID, a.PrimaryKey)
		}
	}
	if !found {
		t.Fatalf("no hash prefix design: %+v", rep.Alternatives)
	}
}

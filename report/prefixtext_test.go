package report

import (
	"fmt"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// The common prefix of the key's values is shown as the bytes they share: a VARBINARY column's
// in hex, as its values and split keys are shown, and text cut inside a character with the
// bytes it holds. Both showed every byte of 0x80 and above as "\xfd" (the replacement
// character's low byte): a report on blobs starting ff ee said they all start with "\xfd\xfd".
func TestCommonPrefixShowsTheSharedBytes(t *testing.T) {
	setSplit := func(c *Config) { c.FormatSplit = pipeline.SplitValue }
	blobs := runReport(t, `
version: 1
source:
  name: ks.t
  columns: {b: blob, v: text}
target:
  table: t
  primary_key: "[b]"
`, &memSource{n: 200, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Bytes(fmt.Sprintf("\xff\xee%c%c", byte(i), byte(i*7))), pipeline.Text("v")}
	}}, setSplit)
	if fc := blobs.FirstColumn; fc.CommonPrefix != "ffee" || fc.PrefixBytes != 2 {
		t.Errorf("VARBINARY first column: common prefix %q (%d bytes), want \"ffee\" (2 bytes)", fc.CommonPrefix, fc.PrefixBytes)
	}
	if kc := blobs.Mapping.KeyColumns[0]; kc.CommonPrefix != "ffee" {
		t.Errorf("VARBINARY key column: common prefix %q, want \"ffee\"", kc.CommonPrefix)
	}
	text := runReport(t, `
version: 1
source:
  name: ks.t
  columns: {id: text, v: text}
target:
  table: t
  primary_key: "[id][v]"
`, &memSource{n: 200, make: func(i int) []pipeline.Value {
		first := "中" // e4 b8 ad
		if i%2 == 1 {
			first = "丰" // e4 b8 b0
		}
		return []pipeline.Value{pipeline.Text(fmt.Sprintf("%s%d", first, i)), pipeline.Text(fmt.Sprintf("�%d", i%2))}
	}}, setSplit)
	if fc := text.FirstColumn; fc.CommonPrefix != `\xe4\xb8` || fc.PrefixBytes != 2 {
		t.Errorf("text cut in a character: common prefix %q (%d bytes), want `\\xe4\\xb8` (2 bytes)", fc.CommonPrefix, fc.PrefixBytes)
	}
	if kc := text.Mapping.KeyColumns[1]; kc.CommonPrefix != "�" {
		t.Errorf("a replacement character the values hold: common prefix %q, want it as it is", kc.CommonPrefix)
	}
}

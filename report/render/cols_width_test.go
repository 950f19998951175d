package render

import (
	"bytes"
	"testing"
)

// The text's tables align by the width a terminal gives each character: a CJK character takes
// two columns. Before, they were aligned by counting characters, so a region table whose split
// keys were Chinese city names had every column after them shifted right.
func TestColsAlignWideCharacters(t *testing.T) {
	var b bytes.Buffer
	p := &printer{w: &b}
	p.cols([][]string{{"start", "end", "rows"}, {"城市08503", "-inf", "250"}, {"a", "城市17003", "1"}}, map[int]bool{2: true})
	want := "" +
		"  start      end        rows\n" +
		"  城市08503  -inf        250\n" +
		"  a          城市17003     1\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/rekey/rekey/pipeline"
)

// htmlTokens is the page as an HTML tokenizer reads it: each tag with its attributes, and each
// text with its character references decoded. Two pages with the same tokens show the same
// thing, whichever characters their escaping spelled as references (&quot; or &#34;).
func htmlTokens(t testing.TB, page []byte) []string {
	t.Helper()
	z := html.NewTokenizer(bytes.NewReader(page))
	var out []string
	for {
		if z.Next() == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatalf("tokenizing the page: %v", z.Err())
			}
			return out
		}
		tok := z.Token()
		out = append(out, fmt.Sprintf("%v %q %q", tok.Type, tok.Data, tok.Attr))
	}
}

// tokenDiff says where two pages differ as an HTML tokenizer reads them, or "" when they give
// the same tokens (they then differ in escaping only).
func tokenDiff(t testing.TB, want, got []byte) string {
	t.Helper()
	wt, gt := htmlTokens(t, want), htmlTokens(t, got)
	for i := 0; i < max(len(wt), len(gt)); i++ {
		var w, g string
		if i < len(wt) {
			w = wt[i]
		}
		if i < len(gt) {
			g = gt[i]
		}
		if w != g {
			return fmt.Sprintf("token %d\nwant: %.400s\ngot:  %.400s", i, w, g)
		}
	}
	return ""
}

// controlBytes are the bytes the page must not hold raw: XML forbids them, and a browser may
// show them as nothing. Tab and newline are allowed.
func controlBytes(page []byte) []byte {
	var out []byte
	for _, c := range page {
		if c < 0x20 && c != '\t' && c != '\n' {
			out = append(out, c)
		}
	}
	return out
}

// Control characters never reach the page raw (XML forbids them; a browser may show them as
// nothing). Key values from the data show them as visible escapes (\x01, \t, \n); any other
// text that holds one (a path, a name from the mapping) shows U+FFFD in its place, keeping tab
// and newline. The page stays well-formed XML.
func TestHTMLControlCharacters(t *testing.T) {
	var ctl strings.Builder
	for c := range rune(0x20) {
		ctl.WriteRune(c)
	}
	src := &memSource{n: 300, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text("wechat"), pipeline.Text(fmt.Sprint("k", i%3, ctl.String()))}
	}}
	rep := runReport(t, fmt.Sprintf(ordersYAML, "[code][id]"), src, nil)
	rep.Source.URI = "file:in" + ctl.String() + ".csv"
	var buf bytes.Buffer
	if err := WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	page := buf.Bytes()
	if raw := controlBytes(page); len(raw) > 0 {
		t.Errorf("the page holds control characters raw: %q", raw)
	}
	parseXHTML(t, page)
	key := `k0\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f`
	if !bytes.Contains(page, []byte(`<td class="mono">`+key+`</td>`)) {
		t.Errorf("the top key value is not shown as %s", key)
	}
	uri := "file:in" + strings.Repeat("\uFFFD", 9) + "\t\n" + strings.Repeat("\uFFFD", 21) + ".csv"
	if !bytes.Contains(page, []byte(" · source <code>"+uri+"</code>")) {
		t.Errorf("the source is not shown as %q", uri)
	}
}

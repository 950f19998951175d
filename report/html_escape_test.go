package report

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report/render"
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
	if i, w, g := firstDifference(htmlTokens(t, want), htmlTokens(t, got)); i >= 0 {
		return fmt.Sprintf("token %d\nwant: %.400s\ngot:  %.400s", i, w, g)
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
	if err := render.WriteHTML(&buf, rep); err != nil {
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

// poisonStrings appends s to every string in v that the page could print: fields, slices, map
// keys and values, through pointers.
func poisonStrings(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(v.String() + s)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			poisonStrings(v.Elem(), s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			poisonStrings(v.Field(i), s)
		}
	case reflect.Slice:
		for i := range v.Len() {
			poisonStrings(v.Index(i), s)
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(it.Key())
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			poisonStrings(k, s)
			poisonStrings(e, s)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	}
}

// Every value the page prints from the report is escaped for where it lands: markup in a value
// stays text, so the page has the same elements and attributes as when the values are plain
// (no script, link or event handler appears), control characters show as U+FFFD, and the page
// stays well-formed.
func TestHTMLEscapesEveryValue(t *testing.T) {
	const poison = `</title></style></text><script>alert(1)</script><a href="javascript:alert(1)" onclick="x">'"&+` + "\x00\x01\x1f"
	render := func(suffix string) []byte {
		rep := fullReport(t)
		poisonStrings(reflect.ValueOf(rep), suffix)
		if !strings.HasSuffix(rep.Mapping.Table, suffix) || !strings.HasSuffix(rep.Findings[0].Message, suffix) {
			t.Fatal("the report's strings were not changed")
		}
		var buf bytes.Buffer
		if err := render.WriteHTML(&buf, rep); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	// the elements and attribute names, in order
	shape := func(page []byte) []string {
		var out []string
		z := html.NewTokenizer(bytes.NewReader(page))
		for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
			if tok := z.Token(); tt != html.TextToken {
				keys := make([]string, len(tok.Attr))
				for i, a := range tok.Attr {
					keys[i] = a.Key
				}
				out = append(out, fmt.Sprint(tt, tok.Data, keys))
			}
		}
		return out
	}
	plain, page := render("x"), render(poison)
	if raw := controlBytes(page); len(raw) > 0 {
		t.Errorf("the page holds control characters raw: %q", raw)
	}
	parseXHTML(t, page)
	if i, w, g := firstDifference(shape(plain), shape(page)); i >= 0 {
		t.Errorf("markup in the values changed the page's elements at token %d:\nwith plain values: %s\nwith markup:       %s", i, w, g)
	}
	shown := `<title>rekey report: events&lt;/title&gt;&lt;/style&gt;&lt;/text&gt;&lt;script&gt;`
	if !bytes.Contains(page, []byte(shown)) {
		t.Errorf("the table name is not shown as text in the page's title: %.300s", page[bytes.Index(page, []byte("<title>")):])
	}
}

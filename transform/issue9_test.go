package transform

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// Issue 9, item 2: functions that turn values into VARCHAR must never produce invalid UTF-8
// (one such value makes the whole Parquet file unreadable). Text stays UTF-8 through reverse,
// substr, code and +, which work on characters; a blob's raw bytes that are not UTF-8 are a
// reject with code "encoding" wherever they would become text.
func TestMultiByteTextAndBlobsToVarchar(t *testing.T) {
	blob := pipeline.Bytes
	ok := []struct {
		expr string
		in   map[string]V
		want string
	}{
		{"reverse(s)", map[string]V{"s": txt("中文é😀a")}, "a😀é文中"},
		{"s.substr(1, 3)", map[string]V{"s": txt("中文éx")}, "文é"},
		{"s.substr(2)", map[string]V{"s": txt("中文éx")}, "éx"},
		{"code(s, channels)", map[string]V{"s": txt("微信")}, "wx"},
		{"s + '·' + s", map[string]V{"s": txt("中")}, "中·中"},
		{"reverse(bl)", map[string]V{"bl": blob("\xe4\xb8\xad\xe6\x96\x87")}, "文中"}, // a blob holding UTF-8
		{"bl.substr(0, 1)", map[string]V{"bl": blob("a\xff")}, "a"},                 // the part kept is UTF-8
		{"str(bl)", map[string]V{"bl": blob("abc")}, "abc"},
		{"bl :: VARCHAR", map[string]V{"bl": blob("中")}, "中"},
		{"md5(bl)", map[string]V{"bl": blob("\xff")}, "00594fd4f42ba43fc1ca0427a0576295"}, // digests take any bytes
	}
	dict := func(m *Mapping) {
		m.Target.Codes[0].Entries = append(m.Target.Codes[0].Entries, [2]string{"微信", "wx"})
	}
	for _, c := range ok {
		got, _, rerr := evalExpr(t, c.expr, c.in, dict)
		if rerr != nil || got.S != c.want || got.K != pipeline.KindText {
			t.Errorf("%s %q: got %#v, %v; want text %q", c.expr, c.in, got, rerr, c.want)
		}
	}

	bad := []struct {
		expr string
		in   map[string]V
		msg  string
	}{
		{"reverse(bl)", map[string]V{"bl": blob("a\xff\xfe")}, "reverse(x): the blob is not UTF-8 text (invalid byte 0xff at byte 1)"},
		{"reverse(bl)", map[string]V{"bl": blob("\xe4\xb8")}, "invalid byte 0xe4 at byte 0"}, // a cut character
		{"bl.substr(1, 2)", map[string]V{"bl": blob("a\xffb")}, "substr(1, 2): the blob is not UTF-8"},
		{"bl.substr(0, 1)", map[string]V{"bl": blob("\xe4\xb8a")}, "substr(0, 1)"}, // the first byte of a cut character
		{"str(bl)", map[string]V{"bl": blob("DELIV\xff\xfeERED")}, "str(x): the blob is not UTF-8 text (invalid byte 0xff at byte 5)"},
		{"bl + 'x'", map[string]V{"bl": blob("\xff")}, "operator +"},
		{"s + bl", map[string]V{"s": txt("a"), "bl": blob("\x80")}, "operator +"},
		{"bl :: VARCHAR", map[string]V{"bl": blob("\xff")}, "a blob stored as VARCHAR"},
	}
	for _, c := range bad {
		_, col, rerr := evalExpr(t, c.expr, c.in)
		if rerr == nil || rerr.Code != pipeline.CodeEncoding || !strings.Contains(rerr.Message, c.msg) || rerr.Field != col.Name {
			t.Errorf("%s %q: got %v; want an encoding reject of %s containing %q", c.expr, c.in, rerr, col.Name, c.msg)
		}
	}
	// code(x) with on_missing_code: keep hands back the blob itself for a VARCHAR column
	keep := func(m *Mapping) { m.Target.OnMissingCode = "keep" }
	if _, _, rerr := evalExpr(t, "code(bl, channels)", map[string]V{"bl": blob("\xff")}, keep); rerr == nil || rerr.Code != pipeline.CodeEncoding {
		t.Errorf("code(bl) kept: %v; want an encoding reject", rerr)
	}
	if got, _, rerr := evalExpr(t, "code(bl, channels)", map[string]V{"bl": blob("taobao")}, keep); rerr != nil || got != txt("tb") {
		t.Errorf("code(bl) found: %v, %v", got, rerr)
	}
	// a blob carried over stays VARBINARY, whatever its bytes
	if got, col, rerr := evalExpr(t, "bl", map[string]V{"bl": blob("\xff")}); rerr != nil || got != blob("\xff") || col.Type != pipeline.TypeVarbinary {
		t.Errorf("carried blob: %v %v %v", got, col.Type, rerr)
	}
}

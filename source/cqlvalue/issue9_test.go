package cqlvalue

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rekey/rekey/pipeline"
)

// Issue 9, item 2: `DELIV\xFF\xFEERED` in a text column was passed through and written into a
// Parquet STRING column, which made the whole file unreadable. Text that is not UTF-8 is now an
// *EncodingError (reject code "encoding") naming the byte; a blob takes any bytes.
func TestInvalidUTF8TextIsEncodingError(t *testing.T) {
	cases := []struct {
		typ, in string
		json    bool
		offset  int // -1: no offset check
	}{
		{"text", "DELIV\xff\xfeERED", false, 5},
		{"varchar", "\xe4\xb8", false, 0},     // a multi-byte character cut short
		{"text", "ok \xed\xa0\x80", false, 3}, // a UTF-8-encoded surrogate (CESU-8)
		{"text", "\"DELIV\xff\xfeERED\"", true, 5},
		{"text", `"caf\u00e9 ` + "\xff\"", true, 6}, // escapes and a raw invalid byte: not turned into U+FFFD
		{"text", `"\udc80"`, true, -1},              // a lone low surrogate: encoding/json makes it U+FFFD
		{"text", `"a\ud83d"`, true, -1},             // a high surrogate without its pair
		{"text", `"a\ud83dx"`, true, -1},
		{"text", `"\ud83d\u0041"`, true, -1},
		{"list<text>", "['a', 'b\xff']", false, -1},
		{"map<text, int>", "{'k\xff': 1}", false, -1},
		{"list<text>", `["\udc80"]`, true, -1},
	}
	for _, c := range cases {
		typ, err := ParseType(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		var got pipeline.Value
		if c.json {
			got, err = typ.FromJSON(c.in)
		} else {
			got, err = typ.ParseText(c.in)
		}
		var ee *EncodingError
		if !errors.As(err, &ee) || ErrorCode(err) != pipeline.CodeEncoding {
			t.Errorf("%s %q: got %v, %v; want an encoding error", c.typ, c.in, v(got), err)
			continue
		}
		if c.offset >= 0 && ee.Offset != c.offset {
			t.Errorf("%s %q: offset %d, want %d (%v)", c.typ, c.in, ee.Offset, c.offset, err)
		}
		if !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("%s %q: message %q does not say what is wrong", c.typ, c.in, err)
		}
	}
	if _, err := Scalar(Text).ParseText("DELIV\xff\xfeERED"); err == nil || !strings.Contains(err.Error(), "0xff at byte 5") {
		t.Errorf("message: %v", err)
	}

	ok := []struct{ typ, in, want string }{
		{"text", "中文 é 😀", "text:中文 é 😀"},
		{"blob", "0xfffe", "bytes:\xff\xfe"},
		{"text", `"\ud83d\ude00 \u4e2d"`, "text:😀 中"}, // a surrogate pair is one character
		{"text", `"\u00e9\n\/"`, "text:é\n/"},
	}
	for _, c := range ok {
		typ, _ := ParseType(c.typ)
		var got pipeline.Value
		var err error
		if strings.HasPrefix(c.in, `"`) {
			got, err = typ.FromJSON(c.in)
		} else {
			got, err = typ.ParseText(c.in)
		}
		if err != nil || v(got) != c.want {
			t.Errorf("%s %q = %q, %v; want %q", c.typ, c.in, v(got), err, c.want)
		}
	}
	// ascii stays a type error
	if _, err := Scalar(Ascii).ParseText("\xff"); err == nil || ErrorCode(err) != pipeline.CodeType {
		t.Errorf("ascii: %v", err)
	}
}

// FuzzUnquoteJSON checks rekey's JSON string decoder against encoding/json: wherever both accept
// a literal and encoding/json did not have to replace anything (valid UTF-8, no lone
// surrogates), they give the same text.
func FuzzUnquoteJSON(f *testing.F) {
	for _, s := range []string{`"a\"b\u00e9\n"`, `"\ud83d\ude00"`, `"\udc80"`, `"\\\/\b\f\r\t"`, `"x\u0000y"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		end, err := skipString(raw, 0)
		if err != nil || len(raw) == 0 || raw[0] != '"' || end != len(raw) {
			return
		}
		got, err := unquoteJSON(raw)
		var want string
		jerr := json.Unmarshal([]byte(raw), &want)
		if jerr != nil {
			if err == nil {
				t.Fatalf("%q: accepted %q, encoding/json: %v", raw, got, jerr)
			}
			return
		}
		if err != nil {
			var ee *EncodingError
			if !errors.As(err, &ee) {
				t.Fatalf("%q: %v, encoding/json gives %q", raw, err, want)
			}
			return
		}
		if utf8.ValidString(got) && got != want {
			t.Fatalf("%q: %q, encoding/json %q", raw, got, want)
		}
	})
}

package cqlvalue

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rekey/rekey/pipeline"
)

// Before, `DELIV\xFF\xFEERED` in a text column was passed through and written into a Parquet STRING
// column, which made the whole file unreadable. Text that is not UTF-8 is now an *EncodingError
// (reject code "encoding") naming the byte; a blob takes any bytes.
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

// Timestamps keep every digit they are given or are rejected: before,
// "2024-01-01T00:00:12.345678901Z" was truncated to .345 although values are never rounded, and the
// epoch seconds 1704067200 were read as milliseconds (1970-01-20).
func TestTimestampPrecisionAndEpochUnits(t *testing.T) {
	cases := []tcase{
		// sub-millisecond digits: rejected unless zeros
		{"timestamp", "2024-01-01T00:00:12.345678901Z", "ERR:sub-millisecond digits, which Lindorm's TIMESTAMP (milliseconds) cannot hold"},
		{"timestamp", "2024-01-01T00:00:12.3451Z", "ERR:sub-millisecond"},
		{"timestamp", "2024-01-01T00:00:12.345000000Z", "int:1704067212345"},
		{"timestamp", "2024-01-01 00:00:12.345000+0000", "int:1704067212345"},
		{"timestamp", "2024-01-01T00:00:12.0000001Z", "ERR:sub-millisecond"},
		// no unit: milliseconds within the plausible range
		{"timestamp", "1704067200", "ERR:looks like epoch seconds (2024-01-01T00:00:00.000Z), not milliseconds (1970-01-20T17:21:07.200Z); set source.timestamp_unit: s in the mapping, or ms to accept it as milliseconds"},
		{"timestamp", "-1", "ERR:looks like epoch seconds"},
		{"timestamp", "99999999999", "ERR:looks like epoch seconds"},
		{"timestamp", "100000000000", "int:100000000000"},
		{"timestamp", "-100000000000", "int:-100000000000"},
		{"timestamp", "0", "int:0"}, // the same instant in every unit
		{"timestamp", "1704067200000", "int:1704067200000"},
		{"timestamp", "99999999999999", "int:99999999999999"},
		{"timestamp", "100000000000000", "ERR:looks like epoch microseconds"},
		{"timestamp", "1704067200000000", "ERR:looks like epoch microseconds (2024-01-01T00:00:00.000Z)"},
		{"timestamp", "1704067200000000000", "ERR:set source.timestamp_unit: us or ns in the mapping, or ms to accept it as milliseconds"},
		// explicit units: exact or rejected
		{"timestamp(s)", "1704067200", "int:1704067200000"},
		{"timestamp(s)", "-1", "int:-1000"},
		{"timestamp(s)", "9223372036854776", "ERR:epoch seconds out of range"},
		{"timestamp(ms)", "1704067200", "int:1704067200"},
		{"timestamp(ms)", "-1", "int:-1"},
		{"timestamp(ms)", "9223372036854775807", "int:9223372036854775807"},
		{"timestamp(us)", "1704067200123000", "int:1704067200123"},
		{"timestamp(us)", "1704067200123456", "ERR:sub-millisecond digits"},
		{"timestamp(us)", "-1000", "int:-1"},
		{"timestamp(us)", "-1001", "ERR:sub-millisecond"},
		{"timestamp(ns)", "1704067200123000000", "int:1704067200123"},
		{"timestamp(ns)", "1704067200123000001", "ERR:(epoch nanoseconds): it has sub-millisecond digits"},
		{"timestamp(s)", "2024-01-01T00:00:00Z", "int:1704067200000"}, // text is not affected
		{"timestamp(s)", "x", "ERR:expected epoch seconds or ISO-8601"},
		{"timestamp", "99999999999999999999", "ERR:out of range"},
		// collections carry the unit to their elements
		{"list<timestamp(s)>", "[1704067200, '2024-01-01T00:00:01Z']", `text:["2024-01-01T00:00:00.000Z","2024-01-01T00:00:01.000Z"]`},
		{"list<timestamp>", "[1704067200]", "ERR:looks like epoch seconds"},
	}
	for _, c := range cases {
		typ, err := ParseType(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		got, err := typ.ParseText(c.in)
		check(t, "ParseText", c, v(got), err)
		if strings.HasPrefix(c.in, "1") || strings.HasPrefix(c.in, "-") { // the same as a JSON number
			got, err = typ.FromJSON(c.in)
			check(t, "FromJSON", c, v(got), err)
		}
	}
	if ms, err := EpochMillis(1704067200123000, UnitMicros); err != nil || ms != 1704067200123 {
		t.Errorf("EpochMillis: %d, %v", ms, err)
	}
	if _, err := EpochMillis(1704067200123456, UnitMicros); err == nil {
		t.Error("EpochMillis rounded")
	}
}

func TestTimestampUnitInType(t *testing.T) {
	for in, want := range map[string]string{
		"timestamp(s)": "timestamp(s)", "TIMESTAMP( us )": "timestamp(us)", "timestamp(ms)": "timestamp(ms)",
		"map<text, frozen<list<timestamp(ns)>>>": "map<text, frozen<list<timestamp(ns)>>>",
	} {
		got, err := ParseType(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseType(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"timestamp(x)", "timestamp(s", "timestamp()", "bigint(s)"} {
		if _, err := ParseType(bad); err == nil {
			t.Errorf("ParseType(%q) accepted", bad)
		}
	}
	m, _ := ParseType("map<timestamp, list<timestamp(us)>>")
	got := m.WithTimestampUnit(UnitSeconds)
	if got.String() != "map<timestamp(s), list<timestamp(us)>>" || m.String() != "map<timestamp, list<timestamp(us)>>" {
		t.Errorf("WithTimestampUnit: %s (original now %s)", got, m)
	}
	if !got.Equal(m) || got.Key().Unit() != UnitSeconds {
		t.Error("Equal must ignore units")
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

// plainRun tests eight bytes at a time: every byte value at every position of a word, behind
// every kind of byte before it, stops where a byte-by-byte scan stops and tells non-ASCII alike.
func TestPlainRunMatchesByteScan(t *testing.T) {
	byteScan := func(s string, i int) (int, bool) {
		nonASCII := false
		for ; i < len(s); i++ {
			if c := s[i]; c == '"' || c == '\\' || c < 0x20 {
				break
			}
			nonASCII = nonASCII || s[i] >= utf8.RuneSelf
		}
		return i, nonASCII
	}
	buf := make([]byte, 20)
	for _, fill := range []byte{'a', 0xe9, 0x1f, '"', '\\', 0x20, 0x7f, 0x80, 0xff} {
		for pos := 0; pos < len(buf); pos++ {
			for c := 0; c < 256; c++ {
				for k := range buf {
					buf[k] = 'x'
				}
				if pos > 0 {
					buf[pos-1] = fill // the byte before: a borrow from it must not hide c
				}
				buf[pos] = byte(c)
				s := string(buf)
				for from := 0; from <= 3; from++ {
					gi, gn := plainRun(s, from)
					wi, wn := byteScan(s, from)
					if gi != wi || gn != wn {
						t.Fatalf("plainRun(%q, %d) = %d, %v; byte scan %d, %v", s, from, gi, gn, wi, wn)
					}
				}
			}
		}
	}
}

// A timestamp or date beyond the four-digit years (Cassandra holds any epoch millisecond and any
// int32 day) is written as ISO-8601 writes it, the year with more digits or a sign
// ("+10000-01-01T00:00:00Z" from dsbulk, Java's Instant; "10000-01-01T..." and "-0001-..." from
// AppendJSON, which verify --repair writes): it reads back as the same instant, and one beyond
// the type's range is rejected, not wrapped.
func TestTimestampsAndDatesBeyondFourDigitYears(t *testing.T) {
	cases := []tcase{
		{"timestamp", "+10000-01-01T00:00:00Z", "int:253402300800000"},
		{"timestamp", "10000-01-01T00:00:00.000Z", "int:253402300800000"},
		{"timestamp", "+10000-01-01", "int:253402300800000"},
		{"timestamp", "-0001-12-31T00:00:00Z", "int:-62167305600000"},
		{"timestamp", "+0001-01-01T00:00:00Z", "int:-62135596800000"},
		{"timestamp", "292278994-08-17T07:12:55.807Z", "int:9223372036854775807"},
		{"timestamp", "-292275055-05-16T16:47:04.192Z", "int:-9223372036854775808"},
		{"timestamp", "292278994-08-17T07:12:55.808Z", "ERR:out of range"},
		{"timestamp", "292278994-08-17T07:12:55.807-01:00", "ERR:out of range"},
		{"timestamp", "-292275055-05-16T16:47:04.191Z", "ERR:out of range"},
		{"timestamp", "+9999999999-01-01T00:00:00Z", "ERR:expected epoch milliseconds or ISO-8601"},
		{"timestamp", "+999-01-01T00:00:00Z", "ERR:expected epoch milliseconds or ISO-8601"},
		{"timestamp", "10000-02-30T00:00:00Z", "ERR:expected epoch milliseconds or ISO-8601"},
		{"date", "+10000-01-01", "int:2932897"},
		{"date", "10000-01-01", "int:2932897"},
		{"date", "-0001-12-31", "int:-719529"},
		{"date", "5881580-07-11", "int:2147483647"},
		{"date", "-5877641-06-23", "int:-2147483648"},
		{"date", "5881580-07-12", "ERR:out of range for date"},
		{"date", "-5877641-06-22", "ERR:out of range for date"},
	}
	checkParseText(t, cases)
	// what AppendJSON writes of any such value reads back as it
	ts, dt := Scalar(Timestamp), Scalar(Date)
	lts, _ := ParseType("list<timestamp(ms)>")
	for _, ms := range []int64{253402300800000, -62167305600000, math.MaxInt64, math.MinInt64} {
		v := pipeline.Value{Num: ms, Kind: pipeline.KindInt}
		js := string(ts.AppendJSON(nil, v))
		if back, err := ts.FromJSON(js); err != nil || back != v {
			t.Errorf("timestamp %d: JSON %s reads back as %+v, %v", ms, js, back, err)
		}
		list, err := lts.ParseText("[" + strconv.FormatInt(ms, 10) + "]")
		if err != nil {
			t.Errorf("list<timestamp> [%d]: %v", ms, err)
			continue
		}
		js = string(lts.AppendJSON(nil, list))
		if back, err := lts.FromJSON(js); err != nil || back != list {
			t.Errorf("list<timestamp> [%d]: JSON %s reads back as %+v, %v", ms, js, back, err)
		}
	}
	for _, days := range []int64{2932897, -719529, math.MaxInt32, math.MinInt32} {
		v := pipeline.Value{Num: days, Kind: pipeline.KindInt}
		js := string(dt.AppendJSON(nil, v))
		if back, err := dt.FromJSON(js); err != nil || back != v {
			t.Errorf("date %d: JSON %s reads back as %+v, %v", days, js, back, err)
		}
	}
}

// A time of day that is none says which part and what to write instead: a leap second (23:59:60,
// which epoch times do not count) and 24:00 (the next day's 00:00); it was refused as text that
// is not ISO-8601, which it is.
func TestTimestampClockOutOfRange(t *testing.T) {
	cases := []tcase{
		{"timestamp", "2016-12-31T23:59:60Z", "ERR:second 60, a leap second, which no timestamp holds (epoch times, Cassandra's and Lindorm's, count none): write 23:59:59.999 or the next day's 00:00:00, or declare the column text to keep the text"},
		{"timestamp", "2016-12-31 23:59:60.5+0000", "ERR:a leap second"},
		{"timestamp", "2024-01-02T24:00:00Z", "ERR:hour 24, which no timestamp holds (hours run from 00 to 23): 24:00 is the next day's 00:00"},
		{"timestamp", "2024-01-02T24:00Z", "ERR:hour 24"},
		{"timestamp", "2024-01-02T23:60:00Z", "ERR:expected epoch milliseconds or ISO-8601"},
		{"timestamp", "2024-01-02T23:59:59.999Z", "int:1704239999999"},
	}
	checkParseText(t, cases)
}

// An error quotes a long value cut at the start of a character: cut at a byte count, the quote
// of text in a numeric column ended in an escaped byte ("中中\xe4..."), as if the input held a
// byte that is not UTF-8.
func TestErrorsCutValuesAtACharacter(t *testing.T) {
	long := strings.Repeat("中", 20)
	for _, typ := range []string{"bigint", "boolean", "double", "uuid", "date"} {
		ty, err := ParseType(typ)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ty.ParseText(long)
		if err == nil || strings.Contains(err.Error(), `\x`) || !strings.Contains(err.Error(), "中...") {
			t.Errorf("%s: %v; want the value cut at a character, ending in ...", typ, err)
		}
	}
}

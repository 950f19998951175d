package cassandra

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/gocql/gocql"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cqlvalue"
)

// Before, a text cell that is not UTF-8 (a server that did not validate it, an sstable loaded
// around validation) went into a Parquet STRING column and made the file unreadable, and inside a
// collection it silently became U+FFFD. Both are now rejects with code "encoding".
func TestInvalidUTF8CellsAreEncodingRejects(t *testing.T) {
	bad := []byte("DELIV\xff\xfeERED")
	for _, typ := range []gocql.Type{gocql.TypeVarchar, gocql.TypeText, gocql.TypeAscii} {
		v, err := decodeOne(t, native(typ), "text", bad)
		var ee *cqlvalue.EncodingError
		if !errors.As(err, &ee) || ee.Offset != 5 {
			t.Errorf("%s: %v, %v; want an encoding error at byte 5", typ, v, err)
		}
		if re := cellError("c", err); re.Code != pipeline.CodeEncoding || re.Field != "c" {
			t.Errorf("%s: reject %+v", typ, re)
		}
	}
	lt := gocql.CollectionType{NativeType: gocql.NewNativeType(4, gocql.TypeList, ""), Elem: native(gocql.TypeVarchar)}
	data, err := gocql.Marshal(lt, []string{"ok", string(bad)})
	if err != nil {
		t.Fatal(err)
	}
	for _, cql := range []string{"list<text>", ""} { // canonical (cqlvalue) and plain JSON paths
		v, err := decodeOne(t, lt, cql, data)
		if cellError("c", err).Code != pipeline.CodeEncoding {
			t.Errorf("list<text> %q: %q, %v; want an encoding error", cql, v.Str, err)
		}
	}
	if re := cellError("c", lengthError("8", 3)); re.Code != pipeline.CodeParse {
		t.Errorf("other errors stay parse: %+v", re)
	}
}

// Epoch integers that look like seconds are rejected when no unit is given, but Cassandra's
// timestamps are epoch milliseconds on the wire: its collections' timestamps, which go through
// cqlvalue to be canonical, must keep every value (here 5 ms and -1 ms).
func TestCassandraTimestampsInCollectionsAreMilliseconds(t *testing.T) {
	lt := gocql.CollectionType{NativeType: gocql.NewNativeType(4, gocql.TypeList, ""), Elem: native(gocql.TypeTimestamp)}
	data, err := gocql.Marshal(lt, []int64{5, -1, 1704067200000})
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeOne(t, lt, "list<timestamp>", data)
	want := `["1970-01-01T00:00:00.005Z","1969-12-31T23:59:59.999Z","2024-01-01T00:00:00.000Z"]`
	if err != nil || v.Str != want {
		t.Errorf("got %q, %v; want %s", v.Str, err, want)
	}
}

// Every text cell's verdict is utf8.Valid's, whatever its length and wherever a byte above 0x7f
// sits in it: a valid multi-byte rune is kept as it is, a stray or truncated byte is a reject, in
// a plain text column and inside a collection.
func TestTextCellsAreValidUTF8AtEveryLengthAndPosition(t *testing.T) {
	lt := gocql.CollectionType{NativeType: gocql.NewNativeType(4, gocql.TypeList, ""), Elem: native(gocql.TypeVarchar)}
	inserts := []string{"é", "中", "😀", "\xff", "\xc3", "\xe4\xb8", "\x80", "\xed\xa0\x80"}
	for n := 0; n <= 40; n++ {
		ascii := []byte("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH")[:n]
		cells := [][]byte{ascii}
		for pos := 0; pos <= n; pos++ {
			for _, ins := range inserts {
				cells = append(cells, append(append(append([]byte(nil), ascii[:pos]...), ins...), ascii[pos:]...))
			}
		}
		for _, cell := range cells {
			valid := utf8.Valid(cell)
			v, err := decodeOne(t, native(gocql.TypeVarchar), "text", cell)
			if valid && (err != nil || v.Str != string(cell) || v.Kind != pipeline.KindText) {
				t.Fatalf("text %q: %+v, %v; want it kept", cell, v, err)
			}
			if !valid && cellError("c", err).Code != pipeline.CodeEncoding {
				t.Fatalf("text %q: %+v, %v; want an encoding reject", cell, v, err)
			}
			data, err := gocql.Marshal(lt, []string{string(cell)})
			if err != nil {
				t.Fatal(err)
			}
			v, err = decodeOne(t, lt, "", data)
			if valid && (err != nil || v.Str != string(cqlvalue.AppendJSONString([]byte("["), string(cell)))+"]") {
				t.Fatalf("list<text> [%q]: %q, %v; want it kept", cell, v.Str, err)
			}
			if !valid && cellError("c", err).Code != pipeline.CodeEncoding {
				t.Fatalf("list<text> [%q]: %q, %v; want an encoding reject", cell, v.Str, err)
			}
		}
	}
}

// A cell handed over by gocql.Iter.Scan (the page decoder's sink) gives exactly what decode gives
// the same bytes, value and reject alike, for the text and 8-byte integer cells the sink reads
// without calling decode: null, empty, well-formed, not UTF-8, wrong lengths.
func TestPageSinkGivesWhatDecodeGives(t *testing.T) {
	cells := [][]byte{nil, {}, []byte("plain"), []byte("exactly16bytes!!"), []byte("送达"), []byte("DELIV\xff\xfeERED"),
		[]byte("quoted \xc3"), {0xff}, {0, 0, 0, 0, 0, 0, 0, 42}, {0x80, 0, 0, 0, 0, 0, 0, 1}, {1, 2, 3},
		{1, 2, 3, 4, 5, 6, 7, 8, 9}}
	for _, typ := range []gocql.Type{gocql.TypeVarchar, gocql.TypeText, gocql.TypeAscii, gocql.TypeBlob, gocql.TypeBigInt,
		gocql.TypeCounter, gocql.TypeTimestamp, gocql.TypeTime, gocql.TypeInt, gocql.TypeDecimal} {
		d, err := newColDecoder("c", native(typ), "", false)
		if err != nil {
			t.Fatal(err)
		}
		pd := newPageDecoder([]*colDecoder{d}, nil, 0, 0)
		pd.mem = &pageMem{}
		sink := pd.dests[0].(gocql.Unmarshaler)
		for _, cell := range cells {
			var a arena
			var scratch []byte
			want, wantErr := d.decode(cell, &a, &scratch)
			pd.vals, pd.rowErr = make([]pipeline.Value, 1), nil
			if err := sink.UnmarshalCQL(native(typ), cell); err != nil {
				t.Fatalf("%s %q: %v", typ, cell, err)
			}
			if got := pd.vals[0]; got != want {
				t.Errorf("%s %q: sink %+v, decode %+v", typ, cell, got, want)
			}
			switch {
			case wantErr == nil && pd.rowErr != nil:
				t.Errorf("%s %q: sink rejects %+v, decode does not", typ, cell, pd.rowErr)
			case wantErr != nil && (pd.rowErr == nil || *pd.rowErr != *cellError("c", wantErr)):
				t.Errorf("%s %q: sink rejects %+v, decode %v", typ, cell, pd.rowErr, wantErr)
			}
		}
	}
}

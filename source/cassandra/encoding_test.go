package cassandra

import (
	"errors"
	"testing"

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

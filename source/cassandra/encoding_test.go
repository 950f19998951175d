package cassandra

import (
	"errors"
	"testing"

	"github.com/gocql/gocql"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cqlvalue"
)

// Issue 9, item 2: a text cell that is not UTF-8 (a server that did not validate it, an sstable
// loaded around validation) went into a Parquet STRING column and made the file unreadable, and
// inside a collection it silently became U+FFFD. Both are now rejects with code "encoding".
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
			t.Errorf("list<text> %q: %q, %v; want an encoding error", cql, v.S, err)
		}
	}
	if re := cellError("c", lengthError("8", 3)); re.Code != pipeline.CodeParse {
		t.Errorf("other errors stay parse: %+v", re)
	}
}

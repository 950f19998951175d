package sqlsink

import (
	"context"
	"errors"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// OpenLookup checks the table like the sink, then reads rows by key in the order asked, nil
// for keys without a row, values typed as the target schema says.
func TestLookupReadsRowsByKey(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			schema := testSchema()
			if _, err := OpenLookup(context.Background(), srv.URI(""), schema, noEnv); !errors.Is(err, ErrTableMismatch) {
				t.Fatalf("lookup of a missing table: %v", err)
			}
			srv.Exec(t, MySQLDDL(schema))
			w := openWriter(t, srv, schema, 2)
			var rows []pipeline.Row
			for i := 0; i < 30; i++ {
				r := testRow(i)
				if i == 4 {
					for j := 2; j < len(r); j++ {
						r[j] = pipeline.Null // nulls read back as nulls
					}
				}
				rows = append(rows, pipeline.Row{Values: r})
			}
			if err := w.Write(context.Background(), rows); err != nil {
				t.Fatal(err)
			}
			l, err := OpenLookup(context.Background(), srv.URI(""), schema, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if l.MaxKeys() != 2000 {
				t.Errorf("MaxKeys %d", l.MaxKeys())
			}
			keys := [][]pipeline.Value{
				testRow(7)[:2], {pipeline.Text("nope"), pipeline.Int(1)}, testRow(4)[:2], testRow(29)[:2], testRow(7)[:2],
			}
			got, err := l.Lookup(context.Background(), keys)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(keys) || got[1] != nil {
				t.Fatalf("got %d rows, the missing key gave %v", len(got), got[1])
			}
			for i, want := range [][]pipeline.Value{testRow(7), nil, rows[4].Values, testRow(29), testRow(7)} {
				if want == nil {
					continue
				}
				if got[i] == nil {
					t.Errorf("key %d: no row", i)
				} else if d := diffRow(schema, want, got[i]); d != "" {
					t.Errorf("key %d: %s", i, d)
				}
			}
			if _, err := l.Lookup(context.Background(), make([][]pipeline.Value, 2001)); err == nil {
				t.Error("2,001 keys accepted")
			}
		})
	}
}

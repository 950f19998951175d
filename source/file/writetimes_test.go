package file

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
)

// With CellWriteTimes a JSON Lines row gives its cells' write times (the WriteTimesMember
// object, epoch ms) as Record.Times, a column without one none (0); a row without the member,
// or with a time that is no positive integer or of an undeclared column, is rejected naming
// the field; without CellWriteTimes the member is an undeclared one, ignored; a CSV file has no
// place for the times and is refused.
func TestJSONLinesCellWriteTimes(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "id", Type: "int"}, {Name: "a", Type: "text"}, {Name: "b", Type: "int"}}
	path := writeFile(t, "repair.jsonl", strings.Join([]string{
		`{"id":1,"a":"x","b":10,"_rekey_write_times":{"a":1700000000123,"b":1700000000456}}`,
		`{"id":2,"a":"y","b":null,"_rekey_write_times":{"a":1700000001000}}`,
		`{"id":3,"a":"z","b":30}`,
		`{"id":4,"a":"w","b":40,"_rekey_write_times":{"a":-5}}`,
		`{"id":5,"a":"v","b":50,"_rekey_write_times":{"c":1700000000000}}`,
		`{"id":6,"a":"u","b":60,"_rekey_write_times":[1]}`,
	}, "\n")+"\n")
	read := func(t *testing.T, times bool) []string {
		src, err := New(Config{Path: path, Schema: schema, CellWriteTimes: times, Workers: 1}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range runAll(t, src, nil) {
			for _, r := range b.Records {
				switch {
				case r.Err != nil:
					got = append(got, fmt.Sprintf("%d %s %s", r.Seq, r.Err.Code, r.Err.Field))
				default:
					got = append(got, fmt.Sprintf("%d %v", r.Seq, r.Times))
				}
			}
		}
		return got
	}
	want := []string{
		"1 [0 1700000000123 1700000000456]",
		"2 [0 1700000001000 0]",
		"3 no_write_time _rekey_write_times",
		"4 no_write_time a",
		"5 no_write_time _rekey_write_times",
		"6 no_write_time _rekey_write_times",
	}
	if got := read(t, true); !slices.Equal(got, want) {
		t.Errorf("with write times:\n got %q\nwant %q", got, want)
	}
	want = []string{"1 []", "2 []", "3 []", "4 []", "5 []", "6 []"}
	if got := read(t, false); !slices.Equal(got, want) {
		t.Errorf("without write times:\n got %q\nwant %q", got, want)
	}
	csv := writeFile(t, "in.csv", "id,a,b\n1,x,10\n")
	if _, err := New(Config{Path: csv, Schema: schema, CellWriteTimes: true}, zap.NewNop()); err == nil || !strings.Contains(err.Error(), "only a JSON Lines file carries") {
		t.Errorf("a CSV file with CellWriteTimes: %v, want a refusal", err)
	}
	named := append(slices.Clone(schema), pipeline.SourceColumn{Name: WriteTimesMember, Type: "int"})
	if _, err := New(Config{Path: path, Schema: named, CellWriteTimes: true}, zap.NewNop()); err == nil || !strings.Contains(err.Error(), "has the name of the member") {
		t.Errorf("a column named %s: %v, want a refusal", WriteTimesMember, err)
	}
}

package file

import (
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestDuplicateHeaderColumn: before, a duplicate header name (amount,amount) silently used the
// first. Two fields that the same declared column would match are an error naming both positions;
// an exact match wins over one that differs in case only, with a warning.
func TestDuplicateHeaderColumn(t *testing.T) {
	for _, tc := range []struct{ header, want string }{
		{"id,amount,name,ts,amount", `header names column "amount" twice (fields 2 and 5): rename or drop one of them in the header line`},
		{"amount,id,amount,name,ts,amount", `header names column "amount" 3 times (fields 1, 3 and 6)`},
		{"id,Amount,name,ts,AMOUNT ", `header has no column "amount" but 2 that match it ignoring case ("Amount" field 2, "AMOUNT " field 5)`},
	} {
		path := writeFile(t, "d.csv", tc.header+"\n1,2,3,4,5,6\n")
		_, err := New(Config{Path: path, Schema: ordersSchema}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("header %s: %v\nwant an error naming the file and: %s", tc.header, err, tc.want)
		}
	}

	// An exact match wins over a field that differs in case only; both that field and the
	// undeclared one are reported at warn level (the default log level shows them).
	core, logs := observer.New(zapcore.WarnLevel)
	path := writeFile(t, "e.csv", "Amount,id,name,ts,amount,extra\n9.5,1,a,0,2.5,x\n")
	src, err := New(Config{Path: path, Schema: ordersSchema}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	got := rowsOf(runAll(t, src, nil))
	if len(got) != 1 || got[0].Values != `int:"1" text:"a" int:"0" decimal:"2.5"` {
		t.Fatalf("exact match: %v", got)
	}
	var msgs []string
	for _, e := range logs.All() {
		msgs = append(msgs, e.Message)
		if e.Message == "ignoring CSV columns that the mapping does not declare" {
			if cols := e.ContextMap()["columns"]; !strings.Contains(strings.Join(toStrings(cols), ","), "Amount,extra") {
				t.Errorf("extra columns logged: %v", cols)
			}
		}
	}
	if len(msgs) != 2 || !strings.HasPrefix(msgs[0], "ignoring CSV columns") || !strings.Contains(msgs[1], "only in case") {
		t.Fatalf("warnings: %q", msgs)
	}
}

func toStrings(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, e.(string))
		}
		return out
	}
	return nil
}

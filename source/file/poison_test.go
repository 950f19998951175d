//go:build rekeypoison

package file

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// Built with -tags rekeypoison, the strings of a released chunk read as 0xFF bytes at once: the
// consumers' tests run so rely on it to show a string kept past Release.
func TestReleasedStringsArePoisoned(t *testing.T) {
	var cb strings.Builder
	cb.WriteString("id,name,ts,amount\n")
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&cb, "%d,name%d,%d,%d.25\n", i, i, i, i)
	}
	path := writeFile(t, "poison.csv", cb.String())
	src, err := New(Config{Path: path, Schema: ordersSchema, BatchSize: 64, Workers: 1, ChunkSize: 4 << 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan pipeline.Batch, 1)
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background(), nil, out); close(out) }()
	var kept []string // each batch's first name, kept past its release
	for b := range out {
		kept = append(kept, b.Records[0].Values[1].Str)
		if want := fmt.Sprintf("name%d", b.Records[0].Seq-1); kept[len(kept)-1] != want {
			t.Fatalf("line %d: name %q before its release, want %q", b.Records[0].Seq, kept[len(kept)-1], want)
		}
		b.Release()
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for i, s := range kept {
		if s != strings.Repeat("\xff", len(s)) {
			t.Fatalf("batch %d: a name kept past its release reads %q, not the poison", i, s)
		}
	}
}

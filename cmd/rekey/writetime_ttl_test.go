package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// A cell Cassandra keeps for good (no TTL of its own, in a table given a default_time_to_live
// after it was written) whose write time plus the table's TTL has passed is left out by a copy
// with write times, as the target would hide it. Verify reads it the same way, so it compares
// that cell as absent on both sides: its verdict says so in a note, instead of claiming the
// table equal to the source without a word on a value Cassandra holds and the target lacks.
func TestVerifyNotesCellsCassandraHoldsPastTheTableTTL(t *testing.T) {
	cas := cassandratest.Open(t)
	srv := cas.Faults(t)
	if err := cas.CreateTable("wtttl", "cells", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "a", Type: "text"}, {Name: "b", Type: "int"}},
		[]string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMicro()
	if err := cas.InsertMany("wtttl", "cells", 2, func(i int, row map[string]any) error {
		row["id"] = i
		row["a"] = cqltest.Cell{Value: fmt.Sprint("a", i), WriteTime: now - 7200*1_000_000} // no TTL: kept for good
		row["b"] = cqltest.Cell{Value: i, WriteTime: now, TTL: 3600}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetDefaultTTL("wtttl", "cells", 3600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mapping := writeFile(t, dir, "m.yaml", strings.Replace(sliceMapping, "wt.slices", "wtttl.cells", 1))
	out := filepath.Join(dir, "out")
	src := cas.URI("wtttl", "cells", "")
	text := mustRun(t, "migrate", "-m", mapping, "--source", src, "--out", out, "--regions", "1", "--progress", "never")
	if !strings.Contains(text, "2 (Cassandra still holds them") {
		t.Errorf("the migrate summary does not count the 2 cells Cassandra holds and the target will not:\n%s", text)
	}
	code, vout, verr := runCLI(t, "verify", "-m", mapping, "--source", src, "--target", out, "--progress", "never")
	if code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", code, vout, verr)
	}
	if !strings.Contains(vout, "note: ") || !strings.Contains(vout, "2 cells Cassandra still holds") || !strings.Contains(vout, "compared as absent") {
		t.Errorf("verify says nothing of the cells Cassandra holds that it compared as absent:\n%s", vout)
	}
}

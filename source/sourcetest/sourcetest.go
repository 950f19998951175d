// Package sourcetest is the conformance suite every source runs: a run reads its input to the end
// with every stream ending Done; a run resumed after any batch (from the cursors a checkpoint would
// hold then) reads exactly the rest, so that the rows before the cut and the rows after it are
// the clean run's rows, each once; the source's Identity is stable across runs and changes when
// the input changes.
package sourcetest

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
)

// Case is one source over one input.
type Case struct {
	// Open opens the source over the input, afresh for every run.
	Open func(t *testing.T) pipeline.Source
	// OpenChanged opens it over a changed input (other content under the same name where the
	// source can tell); its Identity must differ. Nil for a source without Identity. It is called
	// last, so it may change the input Open reads.
	OpenChanged func(t *testing.T) pipeline.Source
	// MinBatches is how many batches the clean run must send at least (default 3), so that the
	// input spans batch boundaries to resume at.
	MinBatches int
}

// Run runs the suite.
func Run(t *testing.T, c Case) {
	t.Helper()
	min := c.MinBatches
	if min == 0 {
		min = 3
	}
	clean := read(t, c.Open(t), nil)
	if len(clean) < min {
		t.Fatalf("the clean run sent %d batches, want at least %d: make the input span batch boundaries", len(clean), min)
	}
	want := tally(clean)
	final := stateAfter(clean, len(clean)-1)
	for stream, st := range final {
		if !st.Done {
			t.Errorf("stream %s: its last batch is not marked Done, so a resume reads it again", stream)
		}
	}

	t.Run("resume after every batch", func(t *testing.T) {
		for i := range clean {
			resume := stateAfter(clean, i)
			got := tally(covered(clean, i))
			for _, b := range read(t, c.Open(t), resume) {
				if st, ok := resume[b.Stream]; ok && st.Done {
					t.Fatalf("resumed after batch %d: stream %s was Done and is read again", i, b.Stream)
				}
				add(got, b)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("resumed after batch %d of %d (%v): %s", i, len(clean), resume, diff(want, got))
			}
		}
	})

	t.Run("identity", func(t *testing.T) {
		first := pipeline.SourceIdentity(c.Open(t))
		if c.OpenChanged == nil {
			return
		}
		if len(first) == 0 {
			t.Fatal("the source has no Identity: a resume could not tell its input was replaced")
		}
		if again := pipeline.SourceIdentity(c.Open(t)); !maps.Equal(first, again) {
			t.Fatalf("Identity differs between two opens of the same input:\n%v\n%v", first, again)
		}
		if changed := pipeline.SourceIdentity(c.OpenChanged(t)); maps.Equal(first, changed) {
			t.Fatalf("Identity %v is the same for a changed input", first)
		}
	})
}

// read runs src to its end from resume and returns its batches.
func read(t *testing.T, src pipeline.Source, resume map[string]pipeline.StreamState) []pipeline.Batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := make(chan pipeline.Batch)
	errc := make(chan error, 1)
	if resume == nil {
		resume = map[string]pipeline.StreamState{}
	}
	go func() { errc <- src.Run(ctx, resume, out); close(out) }()
	var batches []pipeline.Batch
	for b := range out {
		batches = append(batches, b) // never released: the records stay valid
	}
	if err := <-errc; err != nil {
		t.Fatalf("run (resume %v): %v", resume, err)
	}
	return batches
}

// stateAfter is what a checkpoint holds once batches [0, i] are written: per stream, the cursor of
// its last batch that had one (the runner records a batch's cursor only when it has one or is Done).
func stateAfter(batches []pipeline.Batch, i int) map[string]pipeline.StreamState {
	st := map[string]pipeline.StreamState{}
	for _, b := range batches[:i+1] {
		if b.Cursor != "" || b.Done {
			st[b.Stream] = pipeline.StreamState{Cursor: b.Cursor, Done: b.Done}
		}
	}
	return st
}

// covered are the batches among [0, i] that the state after batch i accounts for: per stream,
// those up to its last batch with a cursor.
func covered(batches []pipeline.Batch, i int) []pipeline.Batch {
	last := map[string]int{}
	for j, b := range batches[:i+1] {
		if b.Cursor != "" || b.Done {
			last[b.Stream] = j
		}
	}
	var out []pipeline.Batch
	for j, b := range batches[:i+1] {
		if l, ok := last[b.Stream]; ok && j <= l {
			out = append(out, b)
		}
	}
	return out
}

// tally counts each record (stream, values, error, raw) and the skipped rows per stream.
func tally(batches []pipeline.Batch) map[string]int {
	m := map[string]int{}
	for _, b := range batches {
		add(m, b)
	}
	return m
}

func add(m map[string]int, b pipeline.Batch) {
	for _, r := range b.Records {
		key := fmt.Sprintf("%s|%v", b.Stream, r.Values)
		if r.Err != nil {
			key = fmt.Sprintf("%s|error %v|raw %q", b.Stream, r.Err, r.Raw)
		}
		m[key]++
	}
	if b.Skipped > 0 {
		m[b.Stream+"|skipped"] += int(b.Skipped)
	}
}

func diff(want, got map[string]int) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			lines = append(lines, fmt.Sprintf("%s: %d times, want %d", k, got[k], want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			lines = append(lines, fmt.Sprintf("%s: %d times, not in the clean run", k, got[k]))
		}
	}
	if len(lines) > 10 {
		lines = append(lines[:10], fmt.Sprintf("... and %d more", len(lines)-10))
	}
	return strings.Join(lines, "\n")
}

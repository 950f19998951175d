package merge_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/merge"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// A merge into a bucket killed while it uploads the merged rejects.jsonl (more than a part: a
// multipart upload under way) leaves that upload unfinished. Run again, the merge finishes, and
// no upload is left under --out: the bucket would keep the killed one's parts, and bill them,
// until someone aborts them by hand.
func TestMergeRunAgainAbortsAKilledMergesUploads(t *testing.T) {
	srv := s3test.StartVersitygw(t)
	p := bucketOn("versitygw", srv)
	ins := shards(t, p, "in")
	restore := merge.SetAfterStep(func(s string) error {
		if s == "planned" {
			return errCrash
		}
		return nil
	})
	err := runMerge(t, p, ins, "in/out", merge.Copy)
	restore()
	if !errors.Is(err, errCrash) {
		t.Fatalf("the merge stopped at its plan: %v", err)
	}
	// what the killed merge's upload of rejects.jsonl left: parts, no object
	out := p.open(t, "in/out").(*s3store.Store)
	w, err := out.Create(context.Background(), output.RejectsFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(bytes.Repeat([]byte("{}\n"), 3<<20)); err != nil {
		t.Fatal(err)
	}
	unfinished := func() []string {
		names, err := out.Unfinished(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	wait.For(t, func() bool { return slices.Contains(unfinished(), output.RejectsFile) }, "the upload of "+output.RejectsFile+" under way")
	if err := runMerge(t, p, ins, "in/out", merge.Copy); err != nil {
		t.Fatalf("the merge run again: %v", err)
	}
	if left := unfinished(); len(left) > 0 {
		t.Fatalf("the merge run again finished with uploads left unfinished under --out: %v", left)
	}
}

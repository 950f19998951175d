package output

import (
	"context"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// ctxBucket is a bucket whose requests fail once their context is done, as an S3 client's do.
type ctxBucket struct{ bucket }

func (b ctxBucket) Create(ctx context.Context, name string) (store.Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return b.bucket.Create(ctx, name)
}

func (b ctxBucket) Put(ctx context.Context, name string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.bucket.Put(ctx, name, data)
}

// On an object store a cut uploads the rejects since the last one as a part. That upload ran
// under a context of its own, so a hard stop (the run's context cancelled: a second Ctrl-C) could
// not end it: a stalled store held the stop until its requests timed out. A cut with its context
// done now uploads nothing and fails.
func TestRejectsPartUploadFollowsTheCutsContext(t *testing.T) {
	st := ctxBucket{newBucket(t, t.TempDir())}
	l, err := openRejects(st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Add(&Reject{Position: "a:1", Code: "type"}); err != nil {
		t.Fatal(err)
	}
	j := &Journal{st: st, rejects: l}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = j.Cut(ctx, &pipeline.Checkpoint{})
	objs, lerr := st.List(context.Background(), RejectsPartsDir+"/")
	if lerr != nil {
		t.Fatal(lerr)
	}
	if err == nil || len(objs) > 0 {
		t.Fatalf("a cut with its context cancelled: error %v, uploaded %v: the rejects part's upload does not follow the cut's context", err, objs)
	}
	// the lines stay spooled: a cut with a live context commits them
	if err := j.Cut(context.Background(), &pipeline.Checkpoint{}); err != nil {
		t.Fatal(err)
	}
	if objs, _ := st.List(context.Background(), RejectsPartsDir+"/"); len(objs) != 1 {
		t.Fatalf("after a live cut: %v, want one part", objs)
	}
}

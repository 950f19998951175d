package replicate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"

	"github.com/rekey/rekey/output"
)

// rollRejects is a roll's rejects file (output.RollRejectsFile: rejects/p0002-<first>-<last>.jsonl), a line per rejected
// message (output.Reject with the message's topic, partition and offset). It is written under
// a temporary name and committed with the roll's data files, so a replayed roll rewrites it
// instead of appending its rejects a second time. Mode 0600: the lines hold raw messages, which
// may be personal data.
type rollRejects struct {
	r     *Replicator
	part  int
	first int64
	f     *output.PendingFile
	w     *bufio.Writer
	lines int64
}

func (w *worker) newRejects(first int64) *rollRejects {
	return &rollRejects{r: w.r, part: w.partition, first: first}
}

func (rr *rollRejects) add(ctx context.Context, rj *output.Reject) error {
	if rr.f == nil {
		f, err := rr.r.createFile(ctx, output.RejectsDir, rr.part, rr.first, output.RollRejectsExt)
		if err != nil {
			return fmt.Errorf("create rejects file: %w", err)
		}
		rr.f = f
		rr.w = bufio.NewWriterSize(f, 64<<10)
	}
	line, err := json.Marshal(rj)
	if err != nil {
		return fmt.Errorf("encode reject: %w", err)
	}
	if _, err := rr.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("write the rejects file of partition %d: %w", rr.part, err)
	}
	rr.lines++
	return nil
}

// finish flushes the file (on a folder: fsyncs and closes it under its temporary name).
func (rr *rollRejects) finish() error {
	if rr.f == nil || rr.w == nil {
		return nil
	}
	err := rr.w.Flush()
	if err == nil {
		err = rr.f.Finish()
	}
	rr.w = nil
	if err != nil {
		return fmt.Errorf("close rejects file: %w", err)
	}
	return nil
}

// stage readies the finished file to commit under its final name (see segment.stage).
func (rr *rollRejects) stage(ctx context.Context, partition int, first, last int64, files *rollFiles) (*RejectFile, error) {
	if rr.f == nil {
		return nil, nil
	}
	rel := output.RollRejectsFile(partition, first, last)
	if err := files.stage(ctx, rr.f, rel); err != nil {
		return nil, err
	}
	return &RejectFile{Partition: partition, FirstOffset: first, RollLast: last, Path: rel, Rejects: rr.lines}, nil
}

// abort closes the temporary file and, when remove is set, removes it.
func (rr *rollRejects) abort(remove bool) {
	if rr.f != nil {
		dropFile(rr.f, remove)
		rr.f = nil
	}
}

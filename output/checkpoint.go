package output

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rekey/rekey/pipeline"
	"sort"
	"strings"
	"time"

	"github.com/rekey/rekey/store"
)

// CheckpointFile is the name of the checkpoint in the output directory.
const CheckpointFile = "checkpoint.json"

// ReadCheckpoint reads an output's checkpoint; it returns (nil, nil) when there is none.
func ReadCheckpoint(ctx context.Context, st store.Store) (*pipeline.Checkpoint, error) {
	data, err := st.Get(ctx, CheckpointFile)
	if store.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	c, err := ParseCheckpoint(data)
	if ov := (*OtherVersionError)(nil); errors.As(err, &ov) {
		return nil, fmt.Errorf("%s was %w", st.Location(CheckpointFile), err)
	} else if err != nil {
		return nil, fmt.Errorf("%s is damaged: %w", st.Location(CheckpointFile), err)
	}
	return c, nil
}

// checkpointVersion is the version of the checkpoint's format this rekey writes and reads.
const checkpointVersion = 1

// OtherVersionError is ParseCheckpoint's error for a checkpoint another rekey version wrote: of
// a newer format, or holding a field this rekey does not know (a setting the run began with,
// which this one would drop without a word).
type OtherVersionError struct{ What string }

func (e *OtherVersionError) Error() string {
	return "written by another rekey version (" + e.What + ")"
}

// ParseCheckpoint reads a checkpoint's bytes as ReadCheckpoint does (for a reader of an output
// that holds no store.Store): its error says how it is damaged, or that another rekey version
// wrote it (OtherVersionError).
func ParseCheckpoint(data []byte) (*pipeline.Checkpoint, error) {
	var c pipeline.Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	strict := json.NewDecoder(bytes.NewReader(data))
	strict.DisallowUnknownFields()
	if err := strict.Decode(new(pipeline.Checkpoint)); err != nil {
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, &OtherVersionError{"it holds the field " + field + ", which this rekey does not know"}
		}
		return nil, err
	}
	if c.Version > checkpointVersion {
		return nil, &OtherVersionError{fmt.Sprintf("format version %d; this rekey reads version %d", c.Version, checkpointVersion)}
	}
	if c.Digest != "" && !sealed(data, c.Digest) {
		return nil, ErrCheckpointEdited
	}
	c.Plan.Splits = c.Splits
	for _, f := range c.Files {
		// these paths are deleted around, resumed from and copied into the manifest
		if err := CheckRelPath(f.Path); err != nil {
			return nil, err
		}
	}
	for field, n := range map[string]int64{"rejects_bytes": c.RejectsBytes, "replay_bytes": c.ReplayBytes, "rejects_parts": int64(c.RejectParts)} {
		if n < 0 {
			return nil, fmt.Errorf("%s %d is negative", field, n)
		}
	}
	return &c, nil
}

// regionsAsked is the --regions the run of cp was given: the count its plan was made for, which a
// quantile plan may fall short of (Plan.Count() for a checkpoint that does not record it).
func regionsAsked(cp *pipeline.Checkpoint) int {
	if cp.Regions > 0 {
		return cp.Regions
	}
	return cp.Plan.Count()
}

// saveCheckpoint writes the checkpoint atomically (the local store keeps it 0600: it names the
// source and its cursors, which nobody but the run's user needs).
func saveCheckpoint(ctx context.Context, st store.Store, c *pipeline.Checkpoint) error {
	c.Version = checkpointVersion
	c.Splits = c.Plan.Splits
	c.UpdatedAt = time.Now().UTC()
	c.Digest = ""
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	if err := st.Put(ctx, CheckpointFile, sealCheckpoint(data)); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return nil
}

// removeUncommitted deletes what a crashed run left after its last checkpoint cp: unfinished
// writes (Sweep), data objects cp does not list, and rejects parts past cp's count.
func removeUncommitted(ctx context.Context, st store.Store, cp *pipeline.Checkpoint) (removed []string, err error) {
	if err := SweepOwn(ctx, st); err != nil {
		return nil, fmt.Errorf("remove files of the interrupted run: %w", err)
	}
	listed := make(map[string]bool, len(cp.Files))
	for _, f := range cp.Files {
		listed[f.Path] = true
	}
	objs, err := st.List(ctx, DataDir+"/")
	if err != nil {
		return nil, fmt.Errorf("remove files of the interrupted run: %w", err)
	}
	for _, o := range objs {
		if !listed[o.Name] {
			removed = append(removed, o.Name)
		}
	}
	for _, folder := range []string{RejectsPartsDir, ReplayPartsDir} {
		objs, err := st.List(ctx, folder+"/")
		if err != nil {
			return nil, fmt.Errorf("remove files of the interrupted run: %w", err)
		}
		for _, o := range objs {
			if n, ok := partNumber(o.Name); !ok || n >= cp.RejectParts {
				removed = append(removed, o.Name)
			}
		}
	}
	if err := st.Remove(ctx, removed...); err != nil {
		return nil, fmt.Errorf("remove files of the interrupted run: %w", err)
	}
	sort.Strings(removed)
	return removed, nil
}

// ErrCheckpointEdited is ParseCheckpoint's error for a checkpoint whose digest does not match its
// content: changed since rekey wrote it (edited by hand), it is no cut of the run any more.
var ErrCheckpointEdited = errors.New("it was changed since rekey wrote it (its digest does not match its content): " +
	"a checkpoint edited by hand no longer says which rows the run committed")

// digestField opens the digest, the last field of a checkpoint as MarshalIndent writes it.
const digestField = ",\n  \"digest\": \""

// sealCheckpoint adds to a checkpoint as MarshalIndent wrote it (without a digest, so ending in
// "\n}") its digest, the SHA-256 of those bytes, as its last field, and a final newline.
func sealCheckpoint(data []byte) []byte {
	sum := sha256.Sum256(data)
	body := bytes.TrimSuffix(data, []byte("\n}"))
	return append(append(body, digestField+hex.EncodeToString(sum[:])+"\"\n}"...), '\n')
}

// sealed tells whether data, a checkpoint whose digest field holds digest, is the checkpoint
// sealCheckpoint wrote: the digest is its last field and matches the bytes before it.
func sealed(data []byte, digest string) bool {
	tail := digestField + digest + "\"\n}"
	body, ok := bytes.CutSuffix(bytes.TrimSuffix(data, []byte("\n")), []byte(tail))
	if !ok {
		return false
	}
	sum := sha256.Sum256(append(body, "\n}"...))
	return hex.EncodeToString(sum[:]) == digest
}

package replicate

import (
	"context"
	"fmt"

	"github.com/rekey/rekey/output"
)

// Where a roll's files go until the roll commits: output.PendingFile, named after the roll's
// first offset until the roll's last one, which names it, is known. On a folder it is a
// temporary file beside its final name, renamed under the folder's lock once the manifest (the
// commit point) lists it, so that no reader of the folder sees a file of an uncommitted roll; on
// an object store a local spool file, uploaded under its final name before the manifest (an
// object cannot be renamed). A crash before the manifest leaves, on a folder, temporary files,
// on an object store objects the manifest does not list and unfinished uploads (removed when
// the partition is next assigned, manifest.claim; uploads aborted when the next run takes the
// lock); a crash after it, on a folder, files of a committed roll under their temporary names,
// which the partition's next owner renames first (the manifest's staged renames).

// createFile starts one of a roll's files, to be committed as relDir/<segment name>.ext.
func (r *Replicator) createFile(ctx context.Context, relDir string, partition int, first int64, ext string) (*output.PendingFile, error) {
	f, err := output.CreatePending(ctx, r.cfg.Store, relDir, output.RollPendingName(partition, first, r.member, ext), r.cfg.SpoolDir)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", relDir, err)
	}
	return f, nil
}

// dropFile throws an uncommitted file away; remove false leaves it as a kill would.
func dropFile(f *output.PendingFile, remove bool) {
	if remove {
		f.Abort()
	} else {
		f.Abandon()
	}
}

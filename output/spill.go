package output

import (
	"go.uber.org/zap"

	"github.com/rekey/rekey/internal/spill"
	"github.com/rekey/rekey/store"
)

// SortSpill is the folder a sink spills the runs of the rows it sorts (--sort) to, for the
// output st: on a local disk the output's own folder (the runs go under its region folders, as
// temporary files a resume's sweep removes, and no byte crosses filesystems); for an object
// store a private folder made under dir ("": the system's temporary folder) with prefix, which
// remove deletes (nil for the output's own folder).
func SortSpill(st store.Store, dir, prefix string, log *zap.Logger) (path string, remove func() error, err error) {
	if p, local := store.LocalPath(st); local {
		return p, nil, nil
	}
	if path, err = spill.New(dir, prefix, log); err != nil {
		return "", nil, err
	}
	return path, func() error { return spill.Remove(path) }, nil
}

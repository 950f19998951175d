// Package store is where an output's bytes go: a local folder, or a prefix of an S3 or OSS
// bucket. The region sink, checkpoints, merge and replicate write through a Store, so none of
// them cares which.
//
// Names are slash-separated paths relative to the store's root ("data/region-0000/part-00000.parquet",
// "checkpoint.json"); callers check them with output.CheckRelPath where they come from a file.
//
// What every Store guarantees, and what rekey's resume relies on:
//   - an object is visible (List, Stat, Get, Open) only once whole: Writer.Commit is the atomic
//     commit (rename on a disk, "complete multipart upload" on a bucket);
//   - Put replaces a small object atomically: a reader sees the old bytes or the new, never a mix;
//   - once Commit or Put returned, the bytes survive a crash of this process (fsync on a disk);
//   - a crash before Commit leaves nothing List shows; Sweep removes what it did leave
//     (temporary files, unfinished multipart uploads).
//
// Appending is not offered: object stores cannot append. Logs that grow while a run goes on
// (rejects) are written as numbered objects, or spooled locally and committed with each checkpoint.
package store

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"time"
)

// Store is an output location. Implementations are safe for concurrent use.
type Store interface {
	// Create starts writing the object name. Nothing is visible under name until the Writer's
	// Commit returns; Abort, or a crash, leaves no visible object.
	Create(ctx context.Context, name string) (Writer, error)
	// Put writes a small whole object (a checkpoint, a manifest) atomically and durably.
	Put(ctx context.Context, name string, data []byte) error
	// Get reads a whole object. A missing object is an error that wraps ErrNotExist.
	Get(ctx context.Context, name string) ([]byte, error)
	// Open gives random access to a committed object (checking a Parquet footer on resume, reading
	// an output back in verify). A missing object wraps ErrNotExist.
	Open(ctx context.Context, name string) (Reader, error)
	// Stat describes a committed object. A missing object wraps ErrNotExist.
	Stat(ctx context.Context, name string) (Info, error)
	// List returns every committed object whose name starts with prefix ("" for all, "data/" for a
	// folder), at any depth, sorted by name. Temporary and unfinished objects are not listed.
	List(ctx context.Context, prefix string) ([]Info, error)
	// Remove deletes the named objects; names that do not exist are not an error.
	Remove(ctx context.Context, names ...string) error
	// Sweep removes what unfinished writers under prefix left behind: temporary files on a disk,
	// incomplete multipart uploads in a bucket. Run it only while no writer of this output is live.
	Sweep(ctx context.Context, prefix string) error
	// Location names an object (or, with a trailing slash, a folder) for people and for the
	// bulkload job: "/abs/out/data/", "s3://bucket/prefix/data/". It never holds a secret.
	Location(name string) string
}

// Writer streams one object. Its bytes become visible under the name only when Commit returns.
type Writer interface {
	io.Writer
	// Commit makes the object durable and visible under its name and returns its size.
	Commit(ctx context.Context) (int64, error)
	// Abort throws the object away. It is safe after a failed Write or Commit, and a no-op after
	// a successful Commit.
	Abort() error
}

// Renamer is implemented by the Writers of a local folder, whose objects can be committed under
// a name chosen only once they are finished (their temporary file is renamed to it); a bucket's
// upload is named when it starts. rekey replicate names a roll's files after its last offset.
type Renamer interface {
	Writer
	// Finish makes the bytes durable under the temporary name, which Sweep removes after a crash.
	Finish() error
	// CommitAs is Commit under name rather than the name given to Create.
	CommitAs(ctx context.Context, name string) (int64, error)
}

// Reader reads a committed object at any offset.
type Reader interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// VersionedReader is implemented by the Readers of a bucket's objects: every read is pinned to
// one version of the object, ETag (as Info.ETag gives it), and fails once the object was
// replaced. A caller that recorded the ETag an object was listed with tells by it whether the
// reader reads that version.
type VersionedReader interface {
	Reader
	ETag() string
}

// Info describes a committed object.
type Info struct {
	Name     string // relative to the store's root, slash-separated
	Size     int64
	Modified time.Time
	// ETag is a bucket's version of the object's content (the same bytes keep it, a rewrite
	// changes it); empty on a disk, whose files are told apart by Size and Modified.
	ETag string
}

// ErrNotExist is wrapped by the errors of Get, Open and Stat for a missing object.
var ErrNotExist = fs.ErrNotExist

// IsNotExist tells whether err says an object does not exist.
func IsNotExist(err error) bool { return errors.Is(err, ErrNotExist) }

// Copier is implemented by stores that can copy an object without its bytes passing through
// rekey (a server-side copy within one bucket or endpoint). CopyFrom copies src of from to dst
// of this store, committed as Writer.Commit would; done is false, with no error, when it cannot
// for this pair of stores (another bucket, another endpoint), and the caller copies the bytes.
type Copier interface {
	CopyFrom(ctx context.Context, from Store, src, dst string) (done bool, err error)
}

// Dir is implemented by stores that are local folders: what needs a path (an flock, hard links
// when merging shards) asks for it and falls back to the Store methods otherwise.
type Dir interface {
	Store
	// Path is the folder's absolute path.
	Path() string
}

// ConditionalPutter is implemented by stores that can replace an object only while it is still
// the version read (S3's If-Match and If-None-Match on PutObject): the output lock renews and
// takes over with it, so two runs never both believe they hold it. A server that ignores the
// conditions makes PutIf a Put; callers read the object back as well.
type ConditionalPutter interface {
	// GetVersion reads a whole object and its version (an ETag). A missing object wraps ErrNotExist.
	GetVersion(ctx context.Context, name string) (data []byte, version string, err error)
	// PutIf writes name only if its version is still ifVersion, or, with ifVersion "", only if
	// it does not exist; otherwise it fails with an error wrapping ErrChanged. It returns the
	// version written.
	PutIf(ctx context.Context, name string, data []byte, ifVersion string) (version string, err error)
}

// ErrChanged is wrapped by PutIf's error when the object is no longer the version given.
var ErrChanged = errors.New("the object was changed by another writer")

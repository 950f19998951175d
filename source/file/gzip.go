package file

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"

	"github.com/rekey/rekey/pipeline"
)

// DamagedError reports gzip data that cannot be read to its end: a truncated file, or corrupt
// bytes (a deflate error, a checksum or size mismatch, garbage after a member).
type DamagedError struct {
	Path         string
	Compressed   int64 // bytes of the file consumed when the damage was found
	Size         int64 // the file's size; -1 for stdin
	Uncompressed int64 // uncompressed bytes read before it; -1 while reading the gzip header
	Err          error // from the gzip or flate reader
}

func (e *DamagedError) Truncated() bool { return errors.Is(e.Err, io.ErrUnexpectedEOF) }

func (e *DamagedError) Error() string {
	what, next := "corrupt", "the rows read before it may hold wrong values: fix or replace the file and run again into a new --out"
	if e.Truncated() {
		what, next = "truncated", "the file ends early (an incomplete copy or download?): replace it with a complete copy and run again"
	}
	where := fmt.Sprintf("compressed byte %d of %d", e.Compressed, e.Size)
	if e.Size < 0 { // stdin
		where = fmt.Sprintf("compressed byte %d", e.Compressed)
	}
	if e.Uncompressed >= 0 {
		where += fmt.Sprintf(", uncompressed byte %d", e.Uncompressed)
	} else {
		where += ", in the gzip header"
	}
	return fmt.Sprintf("file %s is damaged: %s gzip data at %s: %v; %s (`gzip -t` checks a file)", e.Path, what, where, e.Err, next)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// Is makes a damaged file a pipeline.ErrDamagedInput: the run fails without committing what it
// read from it.
func (e *DamagedError) Is(target error) bool { return target == pipeline.ErrDamagedInput }

// gzipReader decompresses a gzip file. Every error but the clean end of the last member becomes a
// *DamagedError: the gzip and flate readers report a truncated stream as io.ErrUnexpectedEOF,
// which io.ReadFull also returns for an ordinary short final read, so passed on as is a cut file
// would read as a complete one.
type gzipReader struct {
	zr   *gzip.Reader
	br   *bufio.Reader // the gzip reader reads through it (a flate.Reader), so Buffered is exact
	cr   *countReader
	path string
	size int64
	out  int64 // uncompressed bytes returned
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// newGzipReader reads the gzip header of r, a file of size bytes.
func newGzipReader(r io.Reader, path string, size int64) (*gzipReader, error) {
	g := &gzipReader{cr: &countReader{r: r}, path: path, size: size}
	g.br = bufio.NewReaderSize(g.cr, 64<<10)
	if magic, _ := g.br.Peek(2); len(magic) == 0 {
		return nil, fmt.Errorf("file %s is empty: a .gz file holds at least a gzip header", path)
	} else if len(magic) == 2 && (magic[0] != 0x1f || magic[1] != 0x8b) {
		return nil, fmt.Errorf("file %s: not a gzip file (its first bytes are not a gzip header): if it is not compressed, drop the .gz from its name", path)
	}
	zr, err := gzip.NewReader(g.br)
	if err != nil {
		g.out = -1
		return nil, g.damaged(err)
	}
	g.zr = zr
	return g, nil
}

func (g *gzipReader) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	g.out += int64(n)
	if err != nil && err != io.EOF {
		err = g.damaged(err)
	}
	return n, err
}

func (g *gzipReader) damaged(err error) error {
	return &DamagedError{Path: g.path, Compressed: g.cr.n - int64(g.br.Buffered()), Size: g.size,
		Uncompressed: g.out, Err: err}
}

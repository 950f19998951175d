package files

import (
	"context"
	"fmt"
	"io"

	"github.com/rekey/rekey/pipeline"
)

// Format is one file format (sink/parquet, sink/csv). The region sink keeps one Buffer per
// region and one FileWriter per open file, so that rows are copied into a region's buffer under a
// short lock while the expensive part (encoding, compressing, writing) runs on the caller's
// goroutine outside it, in parallel for different chunks.
type Format interface {
	Name() string // "parquet", "csv"
	Ext() string  // file extension without the dot
	// NewBuffer returns an empty row buffer for the schema.
	NewBuffer(schema pipeline.TargetSchema) (Buffer, error)
	// NewWriter starts a file on w. The writer never closes w.
	NewWriter(w io.Writer, schema pipeline.TargetSchema) (FileWriter, error)
	// Read reads back a file the format wrote for schema (verify reads an output with it): it
	// hands each row's values to to, column by column in schema order, then ends the row, and
	// returns the rows read. A file that is not the format's, or not of schema, or damaged, is an
	// error saying so.
	Read(ctx context.Context, r io.ReaderAt, size int64, schema pipeline.TargetSchema, to RowReceiver) (rows int64, err error)
	// RowName names row pos of file (pos as Read ended the row with) in messages: "f.csv:12" for
	// a text format's line, "f.parquet row 13" for a row index.
	RowName(file string, pos int64) string
}

// RowReceiver takes the rows a Format reads back, a value at a time in the form the file stores
// it; col is the column's index in the schema. A byte slice is valid only during the call.
type RowReceiver interface {
	Null(col int)
	Bytes(col int, b []byte) // VARCHAR, JSON, VARBINARY
	Int(col int, v int64)    // the integer types; TIMESTAMP in epoch ms, DATE in days
	Bool(col int, v bool)
	Float32(col int, v float32)
	Float64(col int, v float64)
	Decimal(col int, hi int64, lo uint64) // the unscaled value, 128-bit two's complement
	// EndRow ends a row; pos names it (see Format.RowName).
	EndRow(pos int64)
}

// ValueChecker is a Format that refuses values of its own beyond CheckRow (CSV: the values
// Spark's CSV reader cannot read back). Its Buffer's Append refuses them too; the sink calls
// CheckValues where it holds rows before appending them (Sort), so that they are rejects at Write.
type ValueChecker interface {
	CheckValues(schema pipeline.TargetSchema, values []pipeline.Value) *pipeline.RowError
}

// Buffer accumulates rows of one region in the format's in-memory layout. It is not safe for
// concurrent use; the sink serializes access.
type Buffer interface {
	// Append copies one row (values in TargetSchema order): nothing of values is retained. A
	// value that does not fit its column gives a *pipeline.RowError (code "type" or "null_key")
	// and leaves the buffer unchanged.
	Append(values []pipeline.Value) error
	// Rows is the number of rows appended since the last Cut.
	Rows() int
	// Mem is the memory the buffer holds, in bytes (allocated capacity: what the budget counts).
	Mem() int64
	// Used is the bytes the buffered rows occupy (length, not capacity): the sink cuts a chunk
	// when it reaches the region's share. After a Cut the buffer may presize itself to the size
	// the last chunk needed, so Mem can exceed Used.
	Used() int64
	// Cut detaches the buffered rows as a Chunk and leaves the buffer empty and reusable.
	Cut() Chunk
}

// Siblings is a Buffer that makes empty buffers learning with it: what one learns about the data
// (sink/parquet: which columns are not worth a dictionary) the others use from their next chunk
// on. All siblings are made before any is filled; then they may be filled concurrently, each by
// one goroutine at a time.
type Siblings interface {
	Sibling() Buffer
}

// ChunkExpecter is a Buffer told how large a chunk the sink cuts: at about used bytes (Used), or
// once it holds rows rows (0: no row bound) and an eighth of used, whichever comes first. A
// buffer without a last chunk to size its columns by (its first) may size them by this: grown
// value by value, a chunk's slices are copied over again at every doubling, from fresh memory.
type ChunkExpecter interface {
	ExpectChunk(rows int, used int64)
}

// NewBuffers returns n empty buffers of the schema, siblings of the first where the format's
// buffers learn together.
func NewBuffers(f Format, schema pipeline.TargetSchema, n int) ([]Buffer, error) {
	first, err := f.NewBuffer(schema)
	if err != nil {
		return nil, fmt.Errorf("%s buffer: %w", f.Name(), err)
	}
	bufs := []Buffer{first}
	for len(bufs) < n {
		b := first
		if s, ok := first.(Siblings); ok {
			b = s.Sibling()
		} else if b, err = f.NewBuffer(schema); err != nil {
			return nil, fmt.Errorf("%s buffer: %w", f.Name(), err)
		}
		bufs = append(bufs, b)
	}
	return bufs[:n], nil
}

// Chunk is a detached run of rows ready to be written as one unit (a Parquet row group).
type Chunk interface {
	Rows() int
	Mem() int64 // memory held until Release
	Release()
}

// FileWriter writes chunks of one file.
type FileWriter interface {
	// Write encodes c and writes it to the file (a Parquet row group, CSV lines). It does not
	// release c.
	Write(c Chunk) error
	// Close writes the footer, if the format has one. It never closes the underlying writer.
	Close() error
}

// Verifier is implemented by formats that can check a committed file is whole (a Parquet
// footer), so that a resume never builds on a file a reader cannot open (output.Verifier).
type Verifier interface {
	Verify(r io.ReaderAt, size int64) error
}

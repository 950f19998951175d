package parquet

import (
	"fmt"
	"io"
	"sync"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
)

// writer writes one Parquet file. The arrow file writer is created by the first chunk, because
// which columns are dictionary-encoded in the file is decided from it: a column whose first
// chunk's dictionary overflowed is written plain in the whole file.
type writer struct {
	f      *Format
	w      io.Writer
	schema pipeline.TargetSchema
	specs  []colSpec
	dict   []bool // dictionary enabled in this file's properties
	fw     *file.Writer
}

// NewWriter starts a Parquet file on w. Nothing is written before the first chunk.
func (f *Format) NewWriter(w io.Writer, schema pipeline.TargetSchema) (files.FileWriter, error) {
	specs, err := specsOf(f, schema)
	if err != nil {
		return nil, err
	}
	return &writer{f: f, w: w, schema: schema, specs: specs, dict: make([]bool, len(specs))}, nil
}

// noCloser hides the Close of the underlying writer: arrow closes what it is given, and the
// sink must fsync and close the file itself.
type noCloser struct{ w io.Writer }

func (n noCloser) Write(p []byte) (int, error) { return n.w.Write(p) }

func (w *writer) props() *parquet.WriterProperties {
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(w.f.level),
		parquet.WithDictionaryDefault(false),
		parquet.WithDataPageSize(w.f.pageSize),
		parquet.WithStats(false), // on key columns only, below
		parquet.WithVersion(parquet.V2_LATEST),
		parquet.WithDataPageVersion(parquet.DataPageV1),
		parquet.WithCreatedBy("rekey"),
	}
	for i, sp := range w.specs {
		if sp.col.IsKey() {
			opts = append(opts, parquet.WithStatsFor(sp.col.Name, true))
		}
		if w.dict[i] {
			opts = append(opts, parquet.WithDictionaryFor(sp.col.Name, true))
		}
	}
	return parquet.NewWriterProperties(opts...)
}

func (w *writer) start(first *chunk) error {
	for i := range w.specs {
		w.dict[i] = w.specs[i].dict && first.cols[i].dictMode
	}
	props := w.props()
	as, err := ArrowSchema(w.schema)
	if err != nil {
		return err
	}
	sc, err := pqarrow.ToParquet(as, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return fmt.Errorf("parquet: schema: %w", err)
	}
	w.fw = file.NewParquetWriter(noCloser{w.w}, sc.Root(), file.WithWriterProps(props))
	return nil
}

// scratch holds the per-write slices of value headers; pooled because they hold pointers.
type scratch struct {
	ba   []parquet.ByteArray
	flba []parquet.FixedLenByteArray
	ones []int16 // definition levels of a column without nulls
}

func (sc *scratch) allPresent(rows int) []int16 {
	for len(sc.ones) < rows {
		sc.ones = append(sc.ones, 1)
	}
	return sc.ones[:rows]
}

var scratchPool = sync.Pool{New: func() any { return &scratch{} }}

// dictEncoder is the part of arrow's (internal) dictionary encoder rekey uses.
type dictEncoder interface {
	PutDictionary(arrow.Array) error
}

// Write writes the chunk as one row group.
func (w *writer) Write(c files.Chunk) (err error) {
	ch, ok := c.(*chunk)
	if !ok {
		return fmt.Errorf("parquet: foreign chunk %T", c)
	}
	if ch.rows == 0 {
		return nil
	}
	if w.fw == nil {
		if err := w.start(ch); err != nil {
			return err
		}
	}
	defer func() {
		// arrow reports some failures (a write error of the underlying file) by panicking
		if r := recover(); r != nil {
			err = fmt.Errorf("parquet: %v", r)
		}
	}()
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	rgw := w.fw.AppendRowGroup()
	for i := range w.specs {
		cw, err := rgw.NextColumn()
		if err != nil {
			return fmt.Errorf("parquet: column %s: %w", w.specs[i].col.Name, err)
		}
		if err := w.writeColumn(cw, i, &ch.cols[i], ch.rows, sc); err != nil {
			return fmt.Errorf("parquet: column %s: %w", w.specs[i].col.Name, err)
		}
	}
	return rgw.Close()
}

func (w *writer) writeColumn(cw file.ColumnChunkWriter, i int, c *colData, rows int, sc *scratch) error {
	sp := &w.specs[i]
	var def []int16
	if sp.nullable {
		def = c.def
		if def == nil {
			def = sc.allPresent(rows)
		}
	}
	var err error
	switch cw := cw.(type) {
	case *file.ByteArrayColumnChunkWriter:
		if c.dictMode && w.dict[i] {
			return w.writeDictIndices(cw, c, def, rows)
		}
		sc.ba = byteArrays(sc.ba[:0], c)
		_, err = cw.WriteBatch(sc.ba, def, nil)
	case *file.Int64ColumnChunkWriter:
		_, err = cw.WriteBatch(c.i64, def, nil)
	case *file.Int32ColumnChunkWriter:
		_, err = cw.WriteBatch(c.i32, def, nil)
	case *file.BooleanColumnChunkWriter:
		_, err = cw.WriteBatch(c.bools, def, nil)
	case *file.Float32ColumnChunkWriter:
		_, err = cw.WriteBatch(c.f32, def, nil)
	case *file.Float64ColumnChunkWriter:
		_, err = cw.WriteBatch(c.f64, def, nil)
	case *file.FixedLenByteArrayColumnChunkWriter:
		n := len(c.data) / sp.width
		sc.flba = sc.flba[:0]
		for k := 0; k < n; k++ {
			sc.flba = append(sc.flba, c.data[k*sp.width:(k+1)*sp.width:(k+1)*sp.width])
		}
		_, err = cw.WriteBatch(sc.flba, def, nil)
	default:
		return fmt.Errorf("unexpected column writer %T", cw)
	}
	return err
}

// byteArrays returns value headers pointing into the column's bytes (no copy). A column kept in
// dictionary mode but written plain (dictionary off in this file) is expanded through its
// dictionary.
func byteArrays(dst []parquet.ByteArray, c *colData) []parquet.ByteArray {
	if c.dictMode {
		for r, k := range c.idx {
			if c.def != nil && c.def[r] == 0 {
				continue
			}
			start := uint32(0)
			if k > 0 {
				start = c.dends[k-1]
			}
			dst = append(dst, c.dvals[start:c.dends[k]:c.dends[k]])
		}
		return dst
	}
	start := uint32(0)
	for _, end := range c.ends {
		dst = append(dst, c.data[start:end:end])
		start = end
	}
	return dst
}

// writeDictIndices seeds the column's dictionary encoder with the chunk's dictionary and writes
// the indices: arrow's pqarrow path for arrow dictionary arrays, without hashing every value.
func (w *writer) writeDictIndices(cw *file.ByteArrayColumnChunkWriter, c *colData, def []int16, rows int) error {
	enc, ok := cw.CurrentEncoder().(dictEncoder)
	if !ok {
		// not dictionary-encoding (cannot happen when enabled in props): write plain values
		sc := scratchPool.Get().(*scratch)
		defer scratchPool.Put(sc)
		sc.ba = byteArrays(sc.ba[:0], c)
		_, err := cw.WriteBatch(sc.ba, def, nil)
		return err
	}
	nd := len(c.dends)
	offs := make([]int32, nd+1)
	for k, e := range c.dends {
		offs[k+1] = int32(e)
	}
	dict := array.NewStringData(array.NewData(arrow.BinaryTypes.String, nd,
		[]*memory.Buffer{nil, memory.NewBufferBytes(int32Bytes(offs)), memory.NewBufferBytes(c.dvals[:len(c.dvals):len(c.dvals)])}, nil, 0, 0))
	defer dict.Release()
	if err := enc.PutDictionary(dict); err != nil {
		return err
	}
	// the indices are spaced (one per row) and their validity bitmap says which are null
	var valid *memory.Buffer
	nulls := 0
	if c.def != nil {
		bits := make([]byte, (rows+7)/8)
		for r, d := range def {
			if d != 0 {
				bits[r>>3] |= 1 << (r & 7)
			} else {
				nulls++
			}
		}
		valid = memory.NewBufferBytes(bits)
	}
	idx := array.NewInt32Data(array.NewData(arrow.PrimitiveTypes.Int32, rows,
		[]*memory.Buffer{valid, memory.NewBufferBytes(int32Bytes(c.idx))}, nil, nulls, 0))
	defer idx.Release()
	return cw.WriteDictIndices(idx, def, nil)
}

func int32Bytes(s []int32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*4)
}

// Close writes the footer. It never closes the underlying writer.
func (w *writer) Close() (err error) {
	if w.fw == nil {
		// no chunk: an empty file still gets a valid footer
		if err := w.start(&chunk{cols: make([]colData, len(w.specs))}); err != nil {
			return err
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parquet: %v", r)
		}
	}()
	return w.fw.Close()
}

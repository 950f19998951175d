package parquet

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"sync"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/metadata"

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
		// arrow v15 marks the root schema element REPEATED, which the format forbids
		// (PARQUET-843, apache/arrow-go#722) and strict readers (hyparquet) refuse.
		parquet.WithRootRepetition(parquet.Repetitions.Required),
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
	sc, err := Schema(w.schema, props)
	if err != nil {
		return fmt.Errorf("parquet: schema: %w", err)
	}
	w.fw = file.NewParquetWriter(noCloser{w.w}, sc.Root(), file.WithWriterProps(props), file.WithWriteMetadata(sparkMetadata()))
	return nil
}

// SparkVersion is what the files give as "org.apache.spark.version", so that Spark 3 (which LTS
// runs) reads DATE and TIMESTAMP values exactly as written.
//
// rekey writes DATE as INT32 days and TIMESTAMP as INT64 milliseconds (never INT96), both in the
// proleptic Gregorian calendar, which is Spark 3's own. Spark decides per file whether to rebase
// (apache/spark sql/core/src/main/scala/org/apache/spark/sql/execution/datasources/
// DataSourceUtils.scala, getRebaseSpec via datetimeRebaseSpec / int96RebaseSpec): a file
// without "org.apache.spark.version" gets the session's datetimeRebaseModeInRead, EXCEPTION by
// default, which fails on a DATE before 1582-10-15 or a TIMESTAMP before 1900
// (READ_ANCIENT_DATETIME), and LEGACY would shift them by the Julian calendar's days. A
// version >= "3.0.0" (datetime) and >= "3.1.0" (INT96), compared as strings, with no
// "org.apache.spark.legacyDateTime" / "org.apache.spark.legacyINT96" key (their presence, with
// any value, means LEGACY; ParquetWriteSupport.init writes them only in LEGACY mode) makes
// Spark read CORRECTED: no rebase. "3.1.0" is the least version that passes both checks; a
// "10.x" would compare below "3.0.0".
const SparkVersion = "3.1.0"

// sparkMetadata is the file key-value metadata Spark reads to decide how to rebase datetimes.
func sparkMetadata() metadata.KeyValueMetadata {
	md := metadata.NewKeyValueMetadata()
	md.Append("org.apache.spark.version", SparkVersion) // cannot fail: valid UTF-8
	return md
}

// scratch holds the per-write slices of value headers; pooled because they hold pointers.
type scratch struct {
	ba    []parquet.ByteArray
	flba  []parquet.FixedLenByteArray
	ones  []int16 // definition levels of a column without nulls
	plain colData // a dictionary column's numbers written plain
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
	var prev file.ColumnChunkWriter
	for i := range w.specs {
		cw, err := rgw.NextColumn() // closes prev: its pages are written
		if err != nil {
			return fmt.Errorf("parquet: column %s: %w", w.specs[i].col.Name, err)
		}
		takePageBuffers(prev)
		lendPageBuffers(cw)
		prev = cw
		if err := w.writeColumn(cw, i, &ch.cols[i], ch.rows, sc); err != nil {
			return fmt.Errorf("parquet: column %s: %w", w.specs[i].col.Name, err)
		}
	}
	if err := rgw.Close(); err != nil {
		return err
	}
	takePageBuffers(prev)
	return nil
}

// arrow v15 gives every column writer (one per column of each row group) a new bytes.Buffer for
// its uncompressed pages and another for the compressed ones, grown to a page's size: about 50
// MB allocated and cleared per million orders rows, for buffers each used for a few pages. The
// writer lends each column writer pooled buffers instead, and takes them back once the column
// is closed (arrow writes a V1 data page out, or copies it, before building the next, and never
// touches them after Close). The fields are found by name; if arrow renames them, the column
// writers keep their own buffers. Remove this when arrow reuses its page buffers.
var pageBufferPool sync.Pool // *bytes.Buffer

// lendPages is off only in tests that compare with arrow's own buffers.
var lendPages = true

// pageBufferFields are the index paths of columnWriter's uncompressedData (a bytes.Buffer) and
// compressedTemp (a *bytes.Buffer) in one typed column writer, ok false when absent.
type pageBufferFields struct {
	unc, cmp []int
	ok       bool
}

var pageBufferFieldsOf sync.Map // reflect.Type (the typed writer's struct) -> pageBufferFields

// pageBuffers returns the column writer's two page buffer fields.
func pageBuffers(cw file.ColumnChunkWriter) (unc *bytes.Buffer, cmp **bytes.Buffer, ok bool) {
	v := reflect.ValueOf(cw)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, nil, false
	}
	v = v.Elem()
	f, found := pageBufferFieldsOf.Load(v.Type())
	if !found {
		var pf pageBufferFields
		u, uok := v.Type().FieldByName("uncompressedData")
		c, cok := v.Type().FieldByName("compressedTemp")
		if uok && cok && u.Type == reflect.TypeFor[bytes.Buffer]() && c.Type == reflect.TypeFor[*bytes.Buffer]() &&
			directPath(v.Type(), u.Index) && directPath(v.Type(), c.Index) {
			pf = pageBufferFields{unc: u.Index, cmp: c.Index, ok: true}
		}
		f, _ = pageBufferFieldsOf.LoadOrStore(v.Type(), pf)
	}
	pf := f.(pageBufferFields)
	if !pf.ok {
		return nil, nil, false
	}
	return (*bytes.Buffer)(unsafe.Pointer(v.FieldByIndex(pf.unc).UnsafeAddr())),
		(**bytes.Buffer)(unsafe.Pointer(v.FieldByIndex(pf.cmp).UnsafeAddr())), true
}

// directPath tells whether the field at index path idx of struct t is reached through embedded
// structs only (no pointer to follow).
func directPath(t reflect.Type, idx []int) bool {
	for _, i := range idx[:len(idx)-1] {
		t = t.Field(i).Type
		if t.Kind() != reflect.Struct {
			return false
		}
	}
	return true
}

// lendPageBuffers gives a new column writer pooled page buffers.
func lendPageBuffers(cw file.ColumnChunkWriter) {
	if !lendPages {
		return
	}
	unc, cmp, ok := pageBuffers(cw)
	if !ok {
		return
	}
	if b, ok := pageBufferPool.Get().(*bytes.Buffer); ok && unc.Cap() == 0 {
		*unc = *b
	}
	if *cmp != nil && (*cmp).Cap() == 0 { // nil: the column is not compressed
		if b, ok := pageBufferPool.Get().(*bytes.Buffer); ok {
			*cmp = b
		}
	}
}

// takePageBuffers puts a closed column writer's page buffers back in the pool.
func takePageBuffers(cw file.ColumnChunkWriter) {
	if cw == nil {
		return
	}
	unc, cmp, ok := pageBuffers(cw)
	if !ok {
		return
	}
	if unc.Cap() > 0 {
		b := new(bytes.Buffer)
		*b = *unc
		*unc = bytes.Buffer{}
		b.Reset()
		pageBufferPool.Put(b)
	}
	if b := *cmp; b != nil && b.Cap() > 0 {
		*cmp = nil
		b.Reset()
		pageBufferPool.Put(b)
	}
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
	if c.dictMode && sp.phys != physBytes {
		if w.dict[i] {
			return w.writeDictIndices(cw, sp, c, def, rows)
		}
		c = plainNumbers(sp, c, sc) // this file holds the column plain
	}
	if c.dictMode && w.dict[i] { // a byte array column's dictionary
		return w.writeDictIndices(cw, sp, c, def, rows)
	}
	w.reservePage(cw, c, sp)
	var err error
	switch cw := cw.(type) {
	case *file.ByteArrayColumnChunkWriter:
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

// reservePage sizes the plain encoder's page buffer for the chunk's values before they are
// written: arrow's encoder starts every column chunk at 1 KiB and doubles it as values come,
// copying what it holds at each step (about twice the pages' bytes copied, 5% of a migrate's CPU
// on the orders CSV). A page ends once it holds the data page size, after the batch of values
// that reached it, so the reservation is at most that, and at most the chunk's bytes: the
// encoder's output is the same.
func (w *writer) reservePage(cw file.ColumnChunkWriter, c *colData, sp *colSpec) {
	values := len(c.i64) + len(c.i32) + len(c.bools) + len(c.f32) + len(c.f64)
	size := 8*len(c.i64) + 4*len(c.i32) + len(c.bools)/8 + 4*len(c.f32) + 8*len(c.f64)
	switch {
	case c.dictMode: // a dictionary column written plain in this file: its values expanded
		return
	case sp.phys == physBytes:
		values = len(c.ends)
		size = len(c.data) + 4*values
	case sp.width > 0:
		values = len(c.data) / sp.width
		size = len(c.data)
	}
	if values == 0 {
		return
	}
	if page := int(w.f.pageSize); size > page {
		batch := int(parquet.DefaultWriteBatchSize) // the values arrow writes between page checks
		// never more than the chunk holds: a few values of 2 MB made a batch of 2 GiB
		size = min(size, page+(size/values+1)*batch)
	}
	cw.CurrentEncoder().ReserveForWrite(size)
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
			dst = append(dst, c.entry(k))
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

// plainNumbers expands a dictionary-encoded number column into its plain values (in the
// scratch's slices).
func plainNumbers(sp *colSpec, c *colData, sc *scratch) *colData {
	out := &sc.plain
	*out = colData{def: c.def, i64: sc.plain.i64[:0], i32: sc.plain.i32[:0], data: sc.plain.data[:0]}
	for r, k := range c.idx {
		if c.def != nil && c.def[r] == 0 {
			continue
		}
		v := c.entry(k)
		switch sp.phys {
		case physInt64:
			out.i64 = append(out.i64, int64(binary.LittleEndian.Uint64(v)))
		case physInt32:
			out.i32 = append(out.i32, int32(binary.LittleEndian.Uint32(v)))
		case physDecimal:
			out.data = append(out.data, v...)
		}
	}
	return out
}

// dictionary is the chunk's dictionary of column c as the arrow array arrow's dictionary
// encoder takes.
func dictionary(sp *colSpec, c *colData) arrow.Array {
	nd := len(c.dends)
	vals := memory.NewBufferBytes(c.dvals[:len(c.dvals):len(c.dvals)])
	switch sp.phys {
	case physInt64:
		return array.NewInt64Data(array.NewData(arrow.PrimitiveTypes.Int64, nd, []*memory.Buffer{nil, vals}, nil, 0, 0))
	case physInt32:
		return array.NewInt32Data(array.NewData(arrow.PrimitiveTypes.Int32, nd, []*memory.Buffer{nil, vals}, nil, 0, 0))
	case physDecimal:
		return array.NewFixedSizeBinaryData(array.NewData(&arrow.FixedSizeBinaryType{ByteWidth: sp.width}, nd, []*memory.Buffer{nil, vals}, nil, 0, 0))
	}
	offs := make([]int32, nd+1)
	for k, e := range c.dends {
		offs[k+1] = int32(e)
	}
	return array.NewStringData(array.NewData(arrow.BinaryTypes.String, nd,
		[]*memory.Buffer{nil, memory.NewBufferBytes(int32Bytes(offs)), vals}, nil, 0, 0))
}

// dictColumn is the part of arrow's typed column writers that writes dictionary indices.
type dictColumn interface {
	WriteDictIndices(indices arrow.Array, defLevels, repLevels []int16) error
}

// dictEncoderOf returns the column writer's current encoder as a dictionary encoder.
func dictEncoderOf(cw file.ColumnChunkWriter) (dictEncoder, bool) {
	var enc any
	switch cw := cw.(type) {
	case *file.ByteArrayColumnChunkWriter:
		enc = cw.CurrentEncoder()
	case *file.Int64ColumnChunkWriter:
		enc = cw.CurrentEncoder()
	case *file.Int32ColumnChunkWriter:
		enc = cw.CurrentEncoder()
	case *file.FixedLenByteArrayColumnChunkWriter:
		enc = cw.CurrentEncoder()
	}
	de, ok := enc.(dictEncoder)
	return de, ok
}

// writeDictIndices seeds the column's dictionary encoder with the chunk's dictionary and writes
// the indices: arrow's pqarrow path for arrow dictionary arrays, without hashing every value.
// sink/parquet BenchmarkDictColumn: 1.5-2.5x less CPU than arrow's own dictionary encoding.
func (w *writer) writeDictIndices(cw file.ColumnChunkWriter, sp *colSpec, c *colData, def []int16, rows int) error {
	enc, ok := dictEncoderOf(cw)
	dc, ok2 := cw.(dictColumn)
	if !ok || !ok2 {
		return fmt.Errorf("column writer %T is not dictionary-encoding", cw) // cannot happen: enabled in props
	}
	dict := dictionary(sp, c)
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
	return dc.WriteDictIndices(idx, def, nil)
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

// Package parquet is the Parquet format of the region sink (sink/files), written with Apache
// Arrow's Go implementation (arrow/go/v15 pqarrow), zstd-compressed.
//
// The schema is declared up front from the target schema, never inferred, with the types Lindorm
// bulkload maps back to its SQL types:
//
//	VARCHAR, JSON   BYTE_ARRAY (STRING/UTF8)          arrow string
//	VARBINARY       BYTE_ARRAY                         arrow binary
//	BIGINT          INT64                              arrow int64
//	INTEGER         INT32                              arrow int32
//	SMALLINT        INT32 (INT(16,true) / INT_16)      arrow int16
//	TINYINT         INT32 (INT(8,true) / INT_8)        arrow int8
//	BOOLEAN         BOOLEAN                            arrow bool
//	FLOAT, DOUBLE   FLOAT, DOUBLE                      arrow float32, float64
//	DECIMAL(p,s)    FIXED_LEN_BYTE_ARRAY (DECIMAL(p,s)) arrow decimal128(p,s)
//	TIMESTAMP       INT64 (TIMESTAMP(MILLIS, UTC))     arrow timestamp[ms, UTC]
//	DATE            INT32 (DATE)                       arrow date32
//
// Primary-key columns are REQUIRED, the others OPTIONAL.
//
// How it is fast: rows are copied into plain Go column slices (no arrow builders, no per-value
// allocation); non-key text, integer, timestamp, date and decimal columns are dictionary-encoded
// by rekey itself while their dictionary stays small and worthwhile; a chunk is written as one
// row group through arrow's low-level column writers (file.Writer, typed WriteBatch /
// WriteDictIndices), so arrow does the Parquet encoding, statistics, compression and footer. The schema is pqarrow.ToParquet of ArrowSchema.
package parquet

import (
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
)

// Format writes Parquet files. The zero value is not usable: call New.
type Format struct {
	level      int   // zstd level
	pageSize   int64 // data page size in bytes
	dictionary bool  // dictionary-encode non-key VARCHAR/JSON columns
	dictMax    int   // dictionary bytes per column per chunk before falling back to plain
	pools      *pools
}

// Option configures the format.
type Option func(*Format)

// WithZstdLevel sets the zstd level (1 fastest ... 22; default 1: bulkload files are
// intermediate, speed matters more than the last percent of size).
func WithZstdLevel(level int) Option { return func(f *Format) { f.level = level } }

// WithDictionary turns dictionary encoding of non-key columns on or off (default on, as in
// parquet-mr, Arrow and DuckDB: enum-like strings, prices, quantities and dates often repeat). A
// column whose chunk turns out to be mostly distinct values (timestamps, ids), or whose
// dictionary outgrows 256 KiB or 32768 entries, falls back to plain values. Key columns are always
// plain: they are nearly unique. Floating-point and boolean columns are plain too.
func WithDictionary(on bool) Option { return func(f *Format) { f.dictionary = on } }

// New returns the Parquet format.
func New(opts ...Option) *Format {
	f := &Format{level: 1, pageSize: 1 << 20, dictionary: true, dictMax: 256 << 10, pools: &pools{}}
	for _, o := range opts {
		o(f)
	}
	return f
}

var _ files.Format = (*Format)(nil)

func (*Format) Name() string { return "parquet" }
func (*Format) Ext() string  { return "parquet" }

// ArrowType is the arrow type a Lindorm column is written as.
func ArrowType(col pipeline.Column) (arrow.DataType, error) {
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		return arrow.BinaryTypes.String, nil
	case pipeline.TypeVarbinary:
		return arrow.BinaryTypes.Binary, nil
	case pipeline.TypeBigint:
		return arrow.PrimitiveTypes.Int64, nil
	case pipeline.TypeInteger:
		return arrow.PrimitiveTypes.Int32, nil
	case pipeline.TypeSmallint:
		return arrow.PrimitiveTypes.Int16, nil
	case pipeline.TypeTinyint:
		return arrow.PrimitiveTypes.Int8, nil
	case pipeline.TypeBoolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case pipeline.TypeFloat:
		return arrow.PrimitiveTypes.Float32, nil
	case pipeline.TypeDouble:
		return arrow.PrimitiveTypes.Float64, nil
	case pipeline.TypeDecimal:
		if col.Precision < 1 || col.Precision > 38 || col.Scale < 0 || col.Scale > col.Precision {
			return nil, fmt.Errorf("column %q: DECIMAL(%d,%d) out of range", col.Name, col.Precision, col.Scale)
		}
		return &arrow.Decimal128Type{Precision: int32(col.Precision), Scale: int32(col.Scale)}, nil
	case pipeline.TypeTimestamp:
		return &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, nil
	case pipeline.TypeDate:
		return arrow.FixedWidthTypes.Date32, nil
	}
	return nil, fmt.Errorf("column %q: type %s has no Parquet mapping", col.Name, col.Type)
}

// ArrowSchema is the arrow schema of the target table: key columns not nullable.
func ArrowSchema(schema pipeline.TargetSchema) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(schema.Columns))
	for i, col := range schema.Columns {
		t, err := ArrowType(col)
		if err != nil {
			return nil, err
		}
		fields[i] = arrow.Field{Name: col.Name, Type: t, Nullable: !col.IsKey()}
	}
	return arrow.NewSchema(fields, nil), nil
}

// dictEligible tells whether rekey dictionary-encodes the column.
func (f *Format) dictEligible(col pipeline.Column) bool {
	if !f.dictionary || col.IsKey() {
		return false
	}
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON, pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint,
		pipeline.TypeTinyint, pipeline.TypeTimestamp, pipeline.TypeDate, pipeline.TypeDecimal:
		return true
	}
	return false
}

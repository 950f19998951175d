// Package parquet is the Parquet format of the region sink (sink/files), written with Apache
// Arrow's Go implementation of Parquet (arrow/go/v15 parquet/file), zstd-compressed.
//
// The schema is declared up front from the target schema, never inferred, with the types Lindorm
// bulkload maps back to its SQL types:
//
//	VARCHAR, JSON   BYTE_ARRAY (STRING/UTF8)          (arrow string)
//	VARBINARY       BYTE_ARRAY                         (arrow binary)
//	BIGINT          INT64 (INT(64,true))               (arrow int64)
//	INTEGER         INT32 (INT(32,true))               (arrow int32)
//	SMALLINT        INT32 (INT(16,true) / INT_16)      (arrow int16)
//	TINYINT         INT32 (INT(8,true) / INT_8)        (arrow int8)
//	BOOLEAN         BOOLEAN                            (arrow bool)
//	FLOAT, DOUBLE   FLOAT, DOUBLE                      (arrow float32, float64)
//	DECIMAL(p,s)    FIXED_LEN_BYTE_ARRAY (DECIMAL(p,s)) (arrow decimal128(p,s))
//	TIMESTAMP       INT64 (TIMESTAMP(MILLIS, UTC))     (arrow timestamp[ms, UTC])
//	DATE            INT32 (DATE)                       (arrow date32)
//
// Primary-key columns are REQUIRED, the others OPTIONAL.
//
// How it is fast: rows are copied into plain Go column slices (no arrow builders, no per-value
// allocation); non-key text, integer, timestamp, date and decimal columns are dictionary-encoded
// by rekey itself while their dictionary stays small and worthwhile; a chunk is written as one
// row group through arrow's low-level column writers (file.Writer, typed WriteBatch /
// WriteDictIndices), so arrow does the Parquet encoding, statistics, compression and footer. The
// schema is Schema: the one pqarrow.ToParquet makes of the arrow types in brackets above
// (TestSchemaIsPqarrows).
package parquet

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/schema"

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

// Node is the Parquet schema node a Lindorm column is written as (the table above): key columns
// REQUIRED, the others OPTIONAL. It is built with arrow's parquet/schema package directly, as
// pqarrow.ToParquet builds it from the arrow type of the column (arrow's Go Parquet writer's
// defaults: decimals as FIXED_LEN_BYTE_ARRAY, TIMESTAMP with its converted type set too), without
// pulling pqarrow's arrow compute and Flight packages into the binary.
func Node(col pipeline.Column) (schema.Node, error) {
	rep := parquet.Repetitions.Optional
	if col.IsKey() {
		rep = parquet.Repetitions.Required
	}
	var logical schema.LogicalType = schema.NoLogicalType{}
	var phys parquet.Type
	length := -1
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		phys, logical = parquet.Types.ByteArray, schema.StringLogicalType{}
	case pipeline.TypeVarbinary:
		phys = parquet.Types.ByteArray
	case pipeline.TypeBigint:
		phys, logical = parquet.Types.Int64, schema.NewIntLogicalType(64, true)
	case pipeline.TypeInteger:
		phys, logical = parquet.Types.Int32, schema.NewIntLogicalType(32, true)
	case pipeline.TypeSmallint:
		phys, logical = parquet.Types.Int32, schema.NewIntLogicalType(16, true)
	case pipeline.TypeTinyint:
		phys, logical = parquet.Types.Int32, schema.NewIntLogicalType(8, true)
	case pipeline.TypeBoolean:
		phys = parquet.Types.Boolean
	case pipeline.TypeFloat:
		phys = parquet.Types.Float
	case pipeline.TypeDouble:
		phys = parquet.Types.Double
	case pipeline.TypeDecimal:
		if col.Precision < 1 || col.Precision > 38 || col.Scale < 0 || col.Scale > col.Precision {
			return nil, fmt.Errorf("column %q: DECIMAL(%d,%d) out of range", col.Name, col.Precision, col.Scale)
		}
		phys, logical = parquet.Types.FixedLenByteArray, schema.NewDecimalLogicalType(int32(col.Precision), int32(col.Scale))
		length = decimalSize(col.Precision)
	case pipeline.TypeTimestamp:
		phys, logical = parquet.Types.Int64, schema.NewTimestampLogicalTypeForce(true, schema.TimeUnitMillis)
	case pipeline.TypeDate:
		phys, logical = parquet.Types.Int32, schema.DateLogicalType{}
	default:
		return nil, fmt.Errorf("column %q: type %s has no Parquet mapping", col.Name, col.Type)
	}
	n, err := schema.NewPrimitiveNodeLogical(col.Name, rep, logical, phys, length, -1)
	if err != nil {
		return nil, fmt.Errorf("column %q: %w", col.Name, err)
	}
	return n, nil
}

// Schema is the file schema of the target table, its root named and repeated as props say.
func Schema(ts pipeline.TargetSchema, props *parquet.WriterProperties) (*schema.Schema, error) {
	fields := make(schema.FieldList, len(ts.Columns))
	for i, col := range ts.Columns {
		n, err := Node(col)
		if err != nil {
			return nil, err
		}
		fields[i] = n
	}
	root, err := schema.NewGroupNode(props.RootName(), props.RootRepetition(), fields, -1)
	if err != nil {
		return nil, err
	}
	return schema.NewSchema(root), nil
}

// CheckColumn tells whether a file's leaf column c holds col as Node writes it: the same
// physical type, logical type and, for a FIXED_LEN_BYTE_ARRAY, length. (Whether it is
// REQUIRED is not compared: a reader takes nulls from its definition levels.)
func CheckColumn(col pipeline.Column, c *schema.Column) error {
	n, err := Node(col)
	if err != nil {
		return err
	}
	want := n.(*schema.PrimitiveNode)
	if c.PhysicalType() != want.PhysicalType() || !c.LogicalType().Equals(want.LogicalType()) ||
		want.PhysicalType() == parquet.Types.FixedLenByteArray && c.TypeLength() != want.TypeLength() {
		return fmt.Errorf("column %s is %s, the mapping's %s is written as %s", col.Name,
			typeText(c.PhysicalType(), c.TypeLength(), c.LogicalType()), col.SQLType(),
			typeText(want.PhysicalType(), want.TypeLength(), want.LogicalType()))
	}
	return nil
}

// typeText names a Parquet column type as the table above does: INT64 (TIMESTAMP(MILLIS, UTC)).
func typeText(phys parquet.Type, length int, logical schema.LogicalType) string {
	s := phys.String()
	if phys == parquet.Types.FixedLenByteArray {
		s += fmt.Sprintf("(%d)", length)
	}
	switch lt := logical.(type) {
	case nil, schema.NoLogicalType:
		return s
	case *schema.TimestampLogicalType:
		tz := "local"
		if lt.IsAdjustedToUTC() {
			tz = "UTC"
		}
		unit := map[schema.TimeUnitType]string{schema.TimeUnitMillis: "MILLIS", schema.TimeUnitMicros: "MICROS", schema.TimeUnitNanos: "NANOS"}[lt.TimeUnit()]
		return fmt.Sprintf("%s (TIMESTAMP(%s, %s))", s, unit, tz)
	case *schema.IntLogicalType:
		return fmt.Sprintf("%s (INT(%d,%t))", s, lt.BitWidth(), lt.IsSigned())
	case *schema.DecimalLogicalType:
		return fmt.Sprintf("%s (DECIMAL(%d,%d))", s, lt.Precision(), lt.Scale())
	default:
		return s + " (" + strings.ToUpper(lt.String()) + ")"
	}
}

// decimalSize is the bytes of a FIXED_LEN_BYTE_ARRAY DECIMAL of the precision (1 to 38): the
// fewest that hold its values in two's complement, ceil((precision*log2(10)+1)/8), as arrow's
// and Impala's writers size it.
func decimalSize(precision int) int {
	return [...]int{-1, 1, 1, 2, 2, 3, 3, 4, 4, 4, 5, 5, 6, 6, 6, 7, 7, 8, 8, 9,
		9, 9, 10, 10, 11, 11, 11, 12, 12, 13, 13, 13, 14, 14, 15, 15, 16, 16, 16}[precision]
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

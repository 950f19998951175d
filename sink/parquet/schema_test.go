package parquet_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	pq "github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/apache/arrow/go/v15/parquet/schema"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
)

// arrowType is the arrow type each Lindorm column type stands for (the package's table):
// pqarrow.ToParquet of these is the schema the files had when they were written through pqarrow.
func arrowType(col pipeline.Column) arrow.DataType {
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		return arrow.BinaryTypes.String
	case pipeline.TypeVarbinary:
		return arrow.BinaryTypes.Binary
	case pipeline.TypeBigint:
		return arrow.PrimitiveTypes.Int64
	case pipeline.TypeInteger:
		return arrow.PrimitiveTypes.Int32
	case pipeline.TypeSmallint:
		return arrow.PrimitiveTypes.Int16
	case pipeline.TypeTinyint:
		return arrow.PrimitiveTypes.Int8
	case pipeline.TypeBoolean:
		return arrow.FixedWidthTypes.Boolean
	case pipeline.TypeFloat:
		return arrow.PrimitiveTypes.Float32
	case pipeline.TypeDouble:
		return arrow.PrimitiveTypes.Float64
	case pipeline.TypeDecimal:
		return &arrow.Decimal128Type{Precision: int32(col.Precision), Scale: int32(col.Scale)}
	case pipeline.TypeTimestamp:
		return &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	case pipeline.TypeDate:
		return arrow.FixedWidthTypes.Date32
	}
	panic("no arrow type for " + col.Type.String())
}

// everyColumn is every column type, each as a key column and as a nullable one, with decimals of
// every precision.
func everyColumn() pipeline.TargetSchema {
	var keys, others []pipeline.Column
	for _, col := range sinktest.AllTypes().Columns {
		col.KeyPos = len(keys)
		keys = append(keys, col)
		col.Name += "_opt"
		col.KeyPos = -1
		others = append(others, col)
	}
	for p := 1; p <= 38; p++ {
		others = append(others, pipeline.Column{Name: fmt.Sprintf("dec%d", p), Type: pipeline.TypeDecimal, Precision: p, Scale: p / 2, KeyPos: -1})
	}
	return pipeline.TargetSchema{Table: "every", Columns: append(keys, others...), KeyLen: len(keys)}
}

// The schema the files are written with is, element by element as the footer stores it, the one
// pqarrow.ToParquet makes of the columns' arrow types: building it without pqarrow (and the arrow
// compute kernels, Flight and gRPC it links) changes no byte of a file.
func TestSchemaIsPqarrows(t *testing.T) {
	ts := everyColumn()
	props := pq.NewWriterProperties(pq.WithRootRepetition(pq.Repetitions.Required))
	got, err := parquet.Schema(ts, props)
	if err != nil {
		t.Fatal(err)
	}
	fields := make([]arrow.Field, len(ts.Columns))
	for i, col := range ts.Columns {
		fields[i] = arrow.Field{Name: col.Name, Type: arrowType(col), Nullable: !col.IsKey()}
	}
	want, err := pqarrow.ToParquet(arrow.NewSchema(fields, nil), props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	g, w := schema.ToThrift(got.Root()), schema.ToThrift(want.Root())
	if len(g) != len(w) {
		t.Fatalf("%d schema elements, pqarrow's %d", len(g), len(w))
	}
	for i := range w {
		if !reflect.DeepEqual(g[i], w[i]) {
			t.Errorf("element %d: %+v, pqarrow's %+v", i, g[i], w[i])
		}
	}
}

// A file column of another type than the mapping's column is written as is refused, naming
// both; the same type passes, REQUIRED or OPTIONAL.
func TestCheckColumn(t *testing.T) {
	ts := everyColumn()
	sc, err := parquet.Schema(ts, pq.NewWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	for i, col := range ts.Columns {
		if err := parquet.CheckColumn(col, sc.Column(i)); err != nil {
			t.Errorf("%s: %v", col.Name, err)
		}
		other := col
		other.KeyPos = -1 - other.KeyPos // a key column read as nullable, and the reverse
		if err := parquet.CheckColumn(other, sc.Column(i)); err != nil {
			t.Errorf("%s, nullability changed: %v", col.Name, err)
		}
	}
	byName := map[string]int{}
	for i, col := range ts.Columns {
		byName[col.Name] = i
	}
	for _, c := range []struct {
		col  pipeline.Column
		file string
		want string
	}{
		{pipeline.Column{Name: "k2", Type: pipeline.TypeInteger}, "k2", "column k2 is INT64 (INT(64,true)), the mapping's INTEGER is written as INT32 (INT(32,true))"},
		{pipeline.Column{Name: "c_ts", Type: pipeline.TypeBigint}, "c_ts", "column c_ts is INT64 (TIMESTAMP(MILLIS, UTC)), the mapping's BIGINT is written as INT64 (INT(64,true))"},
		{pipeline.Column{Name: "c_text", Type: pipeline.TypeVarbinary}, "c_text", "column c_text is BYTE_ARRAY (STRING), the mapping's VARBINARY is written as BYTE_ARRAY"},
		{pipeline.Column{Name: "c_dec", Type: pipeline.TypeDecimal, Precision: 20, Scale: 2}, "c_dec", "column c_dec is FIXED_LEN_BYTE_ARRAY(9) (DECIMAL(20,4)), the mapping's DECIMAL(20,2) is written as FIXED_LEN_BYTE_ARRAY(9) (DECIMAL(20,2))"},
		{pipeline.Column{Name: "c_dec", Type: pipeline.TypeDecimal, Precision: 18, Scale: 4}, "c_dec", "column c_dec is FIXED_LEN_BYTE_ARRAY(9) (DECIMAL(20,4)), the mapping's DECIMAL(18,4) is written as FIXED_LEN_BYTE_ARRAY(8) (DECIMAL(18,4))"},
		{pipeline.Column{Name: "c_small", Type: pipeline.TypeTinyint}, "c_small", "the mapping's TINYINT is written as INT32 (INT(8,true))"},
		{pipeline.Column{Name: "c_date", Type: pipeline.TypeInteger}, "c_date", "column c_date is INT32 (DATE)"},
	} {
		c.col.KeyPos = -1
		err := parquet.CheckColumn(c.col, sc.Column(byName[c.file]))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s as %s: %v, want %q", c.file, c.col.SQLType(), err, c.want)
		}
	}
}

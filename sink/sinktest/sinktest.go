// Package sinktest holds test helpers shared by the sink packages: schemas, deterministic row
// generators, an independent Parquet reader (parquet-go, not arrow) and a writer of files as
// the sink writes them. Only tests import it.
package sinktest

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/store"
)

// AllTypes is a table with every column type: key (k1 VARCHAR, k2 BIGINT DESC), the rest
// nullable.
func AllTypes() pipeline.TargetSchema {
	cols := []pipeline.Column{
		{Name: "k1", Type: pipeline.TypeVarchar, KeyPos: 0},
		{Name: "k2", Type: pipeline.TypeBigint, KeyPos: 1, Desc: true},
		{Name: "c_int", Type: pipeline.TypeInteger, KeyPos: -1},
		{Name: "c_small", Type: pipeline.TypeSmallint, KeyPos: -1},
		{Name: "c_tiny", Type: pipeline.TypeTinyint, KeyPos: -1},
		{Name: "c_bool", Type: pipeline.TypeBoolean, KeyPos: -1},
		{Name: "c_float", Type: pipeline.TypeFloat, KeyPos: -1},
		{Name: "c_double", Type: pipeline.TypeDouble, KeyPos: -1},
		{Name: "c_dec", Type: pipeline.TypeDecimal, Precision: 20, Scale: 4, KeyPos: -1},
		{Name: "c_dec38", Type: pipeline.TypeDecimal, Precision: 38, Scale: 10, KeyPos: -1},
		{Name: "c_ts", Type: pipeline.TypeTimestamp, KeyPos: -1},
		{Name: "c_date", Type: pipeline.TypeDate, KeyPos: -1},
		{Name: "c_bin", Type: pipeline.TypeVarbinary, KeyPos: -1},
		{Name: "c_json", Type: pipeline.TypeJSON, KeyPos: -1},
		{Name: "c_text", Type: pipeline.TypeVarchar, KeyPos: -1},
	}
	return pipeline.TargetSchema{Table: "all_types", Columns: cols, KeyLen: 2}
}

// VarcharPlan splits a VARCHAR first column at the given values.
func VarcharPlan(splits ...string) pipeline.RegionPlan {
	p := pipeline.RegionPlan{Type: pipeline.TypeVarchar, Strategy: "explicit"}
	for _, s := range splits {
		p.Splits = append(p.Splits, pipeline.Text(s))
	}
	return p
}

const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// AllTypesRows generates n rows of AllTypes routed by plan. Deterministic for a seed.
func AllTypesRows(n int, seed uint64, plan pipeline.RegionPlan) []pipeline.Row {
	r := rand.New(rand.NewPCG(seed, 7))
	texts := []string{"", "plain", "with,comma", `with "quotes"`, "line\nbreak", "crlf\r\nx", " lead space", "ünïcødé ✓", "tab\tx"}
	rows := make([]pipeline.Row, n)
	for i := range rows {
		var k1 strings.Builder
		for j := 0; j < 3+r.IntN(20); j++ {
			k1.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		v := make([]pipeline.Value, 15)
		v[0] = pipeline.Text(k1.String())
		v[1] = pipeline.Int(r.Int64() - math.MaxInt64/2)
		null := func() bool { return r.IntN(8) == 0 }
		set := func(i int, val pipeline.Value) {
			if null() {
				v[i] = pipeline.Null
			} else {
				v[i] = val
			}
		}
		set(2, pipeline.Int(int64(int32(r.Uint32()))))
		set(3, pipeline.Int(int64(int16(r.Uint32()))))
		set(4, pipeline.Int(int64(int8(r.Uint32()))))
		set(5, pipeline.Bool(r.IntN(2) == 0))
		set(6, pipeline.Float(float64(float32(r.NormFloat64()*1e6))))
		set(7, pipeline.Float(r.NormFloat64()*1e12))
		switch r.IntN(4) {
		case 0:
			set(8, pipeline.Decimal(fmt.Sprintf("%d.%04d", r.Int64N(1e15)-5e14, r.IntN(10000))))
		case 1:
			set(8, pipeline.Int(r.Int64N(1e12)-5e11))
		case 2:
			set(8, pipeline.Decimal(fmt.Sprintf("-%d.%d", r.Int64N(1e15), r.IntN(100))))
		default:
			set(8, pipeline.Decimal("9999999999999999.9999"))
		}
		// up to 38 digits: beyond int64
		set(9, pipeline.Decimal(fmt.Sprintf("%s%d%017d.%010d", []string{"", "-"}[r.IntN(2)], r.Int64N(1e10), r.Int64N(1e17), r.Int64N(1e10))))
		set(10, pipeline.Int(r.Int64N(4e12)-1e12))
		set(11, pipeline.Int(int64(r.IntN(100000)-30000)))
		b := make([]byte, r.IntN(12))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		set(12, pipeline.Bytes(string(b)))
		set(13, pipeline.Text(fmt.Sprintf(`{"n":%d,"s":"x\"y"}`, r.IntN(100))))
		set(14, pipeline.Text(texts[r.IntN(len(texts))]))
		rows[i] = pipeline.Row{Values: v, Region: plan.Route(v[0])}
	}
	return rows
}

// ForCSV is AllTypes and its rows as the CSV format takes them: without the VARBINARY column
// (CSV refuses it: Lindorm's Spark reader cannot load bytes from text) and with the text values
// CSV rejects replaced (the empty string by "empty", a line break by a space), so that every row
// is written.
func ForCSV(schema pipeline.TargetSchema, rows []pipeline.Row) (pipeline.TargetSchema, []pipeline.Row) {
	keep := make([]int, 0, len(schema.Columns))
	out := schema
	out.Columns = nil
	for i, c := range schema.Columns {
		if c.Type != pipeline.TypeVarbinary {
			keep = append(keep, i)
			out.Columns = append(out.Columns, c)
		}
	}
	csvRows := make([]pipeline.Row, len(rows))
	for r, row := range rows {
		vals := make([]pipeline.Value, len(keep))
		for j, i := range keep {
			v := row.Values[i]
			if t := schema.Columns[i].Type; (t == pipeline.TypeVarchar || t == pipeline.TypeJSON) && !v.IsNull() {
				switch {
				case v.Str == "":
					v = pipeline.Text("empty")
				case strings.ContainsAny(v.Str, "\r\n"):
					v = pipeline.Text(strings.NewReplacer("\r", " ", "\n", " ").Replace(v.Str))
				}
			}
			vals[j] = v
		}
		csvRows[r] = pipeline.Row{Values: vals, Region: row.Region}
	}
	return out, csvRows
}

// Orders is the benchmark table: orders(pk1 VARCHAR, orderid BIGINT, channel, ts, status,
// location, amount DECIMAL(12,2)).
func Orders() pipeline.TargetSchema {
	return pipeline.TargetSchema{Table: "orders", KeyLen: 2, Columns: []pipeline.Column{
		{Name: "pk1", Type: pipeline.TypeVarchar, KeyPos: 0},
		{Name: "orderid", Type: pipeline.TypeBigint, KeyPos: 1},
		{Name: "channel", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1},
		{Name: "status", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "location", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "amount", Type: pipeline.TypeDecimal, Precision: 12, Scale: 2, KeyPos: -1},
	}}
}

// HexPlan splits a VARCHAR first column into n regions by its first hex digits (n a power of 16
// or 16*k).
func HexPlan(n int) pipeline.RegionPlan {
	p := pipeline.RegionPlan{Type: pipeline.TypeVarchar, Strategy: "hex_prefix"}
	for i := 1; i < n; i++ {
		p.Splits = append(p.Splits, pipeline.Text(fmt.Sprintf("%04x", i*65536/n)))
	}
	return p
}

// OrdersRows generates n realistic orders rows: pk1 is a 4-hex-digit salt + customer id +
// order number (~25 chars), routed by plan.
func OrdersRows(n int, seed uint64, plan pipeline.RegionPlan) []pipeline.Row {
	r := rand.New(rand.NewPCG(seed, 11))
	channels := []string{"web", "app", "store", "phone", "partner"}
	statuses := []string{"NEW", "PAID", "SHIPPED", "DELIVERED", "CANCELLED", "RETURNED"}
	locations := make([]string, 300)
	for i := range locations {
		locations[i] = fmt.Sprintf("city-%03d/zone-%02d", i, i%37)
	}
	vals := make([]pipeline.Value, 7*n)
	rows := make([]pipeline.Row, n)
	for i := range rows {
		v := vals[i*7 : i*7+7 : i*7+7]
		cust := r.IntN(2_000_000)
		pk := fmt.Sprintf("%04x_cust%07d_%09d", r.IntN(65536), cust, i)
		v[0] = pipeline.Text(pk)
		v[1] = pipeline.Int(int64(1_000_000_000 + i))
		v[2] = pipeline.Text(channels[r.IntN(len(channels))])
		v[3] = pipeline.Int(1_700_000_000_000 + int64(i)*37 + int64(r.IntN(1000)))
		v[4] = pipeline.Text(statuses[r.IntN(len(statuses))])
		v[5] = pipeline.Text(locations[r.IntN(len(locations))])
		v[6] = pipeline.Decimal(strconv.Itoa(r.IntN(100000)) + "." + strconv.Itoa(10+r.IntN(90)))
		rows[i] = pipeline.Row{Values: v, Region: plan.Route(v[0])}
	}
	return rows
}

// Canon is a comparable text form of a value as its column stores it.
func Canon(col pipeline.Column, v pipeline.Value) string {
	if v.IsNull() {
		return "NULL"
	}
	switch col.Type {
	case pipeline.TypeFloat:
		f, _ := files.FloatValue(col, v)
		return strconv.FormatFloat(float64(float32(f)), 'g', -1, 32)
	case pipeline.TypeDouble:
		f, _ := files.FloatValue(col, v)
		return strconv.FormatFloat(f, 'g', -1, 64)
	case pipeline.TypeDecimal:
		d, err := files.DecimalValue(col, v)
		if err != nil {
			return "ERR " + err.Error()
		}
		return string(d.AppendText(nil, col.Scale))
	case pipeline.TypeBoolean:
		return strconv.FormatBool(v.Num != 0)
	case pipeline.TypeVarbinary:
		return fmt.Sprintf("%x", v.Str)
	}
	return v.String()
}

// CanonRow is Canon over a row.
func CanonRow(schema pipeline.TargetSchema, vals []pipeline.Value) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = Canon(schema.Columns[i], v)
	}
	return out
}

// ParquetFile is what the independent reader found in a file.
type ParquetFile struct {
	Schema    string     // parquet-go's rendering of the file schema
	RowGroups int        // number of row groups
	Rows      [][]string // Canon form of every value
	Values    [][]pipeline.Value
	Meta      *pq.File
}

// ReadParquet reads every row of a Parquet file with parquet-go and converts values back to
// pipeline values using the target schema.
func ReadParquet(path string, schema pipeline.TargetSchema) (*ParquetFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	return ReadParquetAt(fh, st.Size(), path, schema)
}

// ReadParquetAt is ReadParquet of size bytes at r (an object opened on a store, read back through
// its ranged reads); name is for errors.
func ReadParquetAt(r io.ReaderAt, size int64, name string, schema pipeline.TargetSchema) (*ParquetFile, error) {
	f, err := pq.OpenFile(r, size)
	if err != nil {
		return nil, fmt.Errorf("parquet-go open %s: %w", name, err)
	}
	out := &ParquetFile{Schema: f.Schema().String(), RowGroups: len(f.RowGroups()), Meta: f}
	fields := f.Schema().Fields()
	if len(fields) != len(schema.Columns) {
		return nil, fmt.Errorf("%s: %d columns, want %d", name, len(fields), len(schema.Columns))
	}
	rd := pq.NewReader(f)
	defer rd.Close()
	buf := make([]pq.Row, 128)
	for {
		n, err := rd.ReadRows(buf)
		for _, row := range buf[:n] {
			vals := make([]pipeline.Value, len(schema.Columns))
			for _, pv := range row {
				c := pv.Column()
				vals[c] = fromParquet(schema.Columns[c], pv)
			}
			out.Values = append(out.Values, vals)
			out.Rows = append(out.Rows, CanonRow(schema, vals))
		}
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			return nil, fmt.Errorf("parquet-go read %s: %w", name, err)
		}
		if n == 0 {
			break
		}
	}
	return out, nil
}

func fromParquet(col pipeline.Column, v pq.Value) pipeline.Value {
	if v.IsNull() {
		return pipeline.Null
	}
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		return pipeline.Text(string(v.ByteArray()))
	case pipeline.TypeVarbinary:
		return pipeline.Bytes(string(v.ByteArray()))
	case pipeline.TypeBigint, pipeline.TypeTimestamp:
		return pipeline.Int(v.Int64())
	case pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint, pipeline.TypeDate:
		return pipeline.Int(int64(v.Int32()))
	case pipeline.TypeBoolean:
		return pipeline.Bool(v.Boolean())
	case pipeline.TypeFloat:
		return pipeline.Float(float64(v.Float()))
	case pipeline.TypeDouble:
		return pipeline.Float(v.Double())
	case pipeline.TypeDecimal:
		// Decoded with math/big, not with the sink's Dec128, so the reader stays independent.
		b := v.ByteArray() // big-endian two's complement, unscaled
		n := new(big.Int).SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 {
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		r := new(big.Rat).SetFrac(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(col.Scale)), nil))
		return pipeline.Decimal(r.FloatString(col.Scale))
	}
	return pipeline.Value{Kind: pipeline.KindText, Str: "unknown " + v.String()}
}

// DateString renders days since 1970-01-01 as yyyy-mm-dd.
func DateString(days int64) string {
	return time.Unix(days*86400, 0).UTC().Format("2006-01-02")
}

// WriteParquet writes rows (values as the transform produces them) to path as one Parquet file,
// the way the sink does: to plant a file a test then reads or changes.
func WriteParquet(path string, schema pipeline.TargetSchema, rows [][]pipeline.Value) error {
	f := parquet.New()
	buf, err := f.NewBuffer(schema)
	if err != nil {
		return err
	}
	for i, r := range rows {
		if err := buf.Append(r); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
	}
	var out bytes.Buffer
	w, err := f.NewWriter(&out, schema)
	if err != nil {
		return err
	}
	if err := w.Write(buf.Cut()); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// OrdersSchema is a table with a descending key column and a column name that needs quoting:
// what the DDL, the bulkload job and the "Next steps" text are tested with.
func OrdersSchema() pipeline.TargetSchema {
	return pipeline.TargetSchema{Table: "orders", KeyLen: 2, Columns: []pipeline.Column{
		{Name: "pk1", Type: pipeline.TypeVarchar, KeyPos: 0},
		{Name: "orderid", Type: pipeline.TypeBigint, KeyPos: 1, Desc: true},
		{Name: "status", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "amount", Type: pipeline.TypeDecimal, Precision: 12, Scale: 2, KeyPos: -1},
		{Name: "log-event", Type: pipeline.TypeJSON, KeyPos: -1},
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1},
	}}
}

// Folder is the local folder dir as a store (the output of a sink under test).
func Folder(tb testing.TB, dir string) store.Store {
	tb.Helper()
	st, err := store.NewLocal(dir, store.PrivateNames(output.PrivateName)) // as cmd opens an output's folder
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// SliceFiles reads every data file manifest m lists in the output folder dir with ReadParquet,
// grouped by the time slice its name gives (output.SliceFilePrefix); a file of no slice is an
// error.
func SliceFiles(dir string, m *output.Manifest, schema pipeline.TargetSchema) (map[string][]*ParquetFile, error) {
	slices := map[string][]*ParquetFile{}
	for _, r := range m.Regions {
		for _, f := range r.Files {
			start, ok := output.FileSlice(f.Path)
			if !ok {
				return nil, fmt.Errorf("%s belongs to no time slice", f.Path)
			}
			pf, err := ReadParquet(filepath.Join(dir, filepath.FromSlash(f.Path)), schema)
			if err != nil {
				return nil, err
			}
			p := output.SliceFilePrefix(start)
			slices[p] = append(slices[p], pf)
		}
	}
	return slices, nil
}

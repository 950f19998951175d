package verify

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
)

// Values are compared in the form the target stores them, so that a value the transform produced
// as an int for a DOUBLE column equals the double the Parquet file holds. Each value is encoded
// per its target column type:
//
//	null                          0x00
//	VARCHAR, JSON, VARBINARY      0x01 uvarint(len) bytes
//	integer types, TIMESTAMP, DATE 0x01 varint (TIMESTAMP: epoch ms; DATE: days)
//	BOOLEAN                       0x01 0|1
//	FLOAT                         0x01 float32 bits (4 bytes LE); every NaN as one NaN
//	DOUBLE                        0x01 float64 bits (8 bytes LE); every NaN as one NaN
//	DECIMAL(p,s)                  0x01 varint(unscaled) when it fits 64 bits, else 0x02 hi lo
//	                              (the unscaled value at the column's scale: 1.5 and 1.50 are equal)
//
// Floats are compared bit for bit (only NaNs are folded): rekey never rounds a value, so a
// differing bit is a real difference. Two rows are equal when their encodings are equal.

const (
	tagNull  = 0
	tagValue = 1
	tagWide  = 2 // a decimal beyond 64 bits
)

var (
	nan32 = math.Float32bits(float32(math.NaN()))
	nan64 = math.Float64bits(math.NaN())
)

// appendStored appends v's stored form for col, or says why the sink would refuse it (the same
// checks as files.CheckValue: migrate rejected such a row).
func appendStored(dst []byte, col pipeline.Column, v pipeline.Value) ([]byte, *pipeline.RowError) {
	if v.Kind == pipeline.KindNull {
		if col.IsKey() {
			return dst, files.NullKeyError(col)
		}
		return append(dst, tagNull), nil
	}
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON, pipeline.TypeVarbinary:
		s, err := files.TextValue(col, v)
		if err != nil {
			return dst, err
		}
		return appendText(dst, s), nil
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint,
		pipeline.TypeTimestamp, pipeline.TypeDate:
		i, err := files.IntValue(col, v)
		if err != nil {
			return dst, err
		}
		return binary.AppendVarint(append(dst, tagValue), i), nil
	case pipeline.TypeBoolean:
		b, err := files.BoolValue(col, v)
		if err != nil {
			return dst, err
		}
		return appendBool(dst, b), nil
	case pipeline.TypeFloat, pipeline.TypeDouble:
		f, err := files.FloatValue(col, v)
		if err != nil {
			return dst, err
		}
		if col.Type == pipeline.TypeFloat {
			return appendFloat32(dst, float32(f)), nil
		}
		return appendFloat64(dst, f), nil
	case pipeline.TypeDecimal:
		d, err := files.DecimalValue(col, v)
		if err != nil {
			return dst, err
		}
		return appendDecimal(dst, d.Hi, d.Lo), nil
	}
	return dst, files.TypeError(col, "unsupported column type %s", col.Type)
}

func appendText(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(append(dst, tagValue), uint64(len(s)))
	return append(dst, s...)
}

func appendBytes(dst []byte, b []byte) []byte {
	dst = binary.AppendUvarint(append(dst, tagValue), uint64(len(b)))
	return append(dst, b...)
}

func appendInt(dst []byte, i int64) []byte { return binary.AppendVarint(append(dst, tagValue), i) }

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, tagValue, 1)
	}
	return append(dst, tagValue, 0)
}

func appendFloat32(dst []byte, f float32) []byte {
	bits := math.Float32bits(f)
	if f != f {
		bits = nan32
	}
	return binary.LittleEndian.AppendUint32(append(dst, tagValue), bits)
}

func appendFloat64(dst []byte, f float64) []byte {
	bits := math.Float64bits(f)
	if f != f {
		bits = nan64
	}
	return binary.LittleEndian.AppendUint64(append(dst, tagValue), bits)
}

// appendDecimal appends an unscaled 128-bit two's-complement decimal (hi, lo).
func appendDecimal(dst []byte, hi int64, lo uint64) []byte {
	if (hi == 0 && lo < 1<<63) || (hi == -1 && lo >= 1<<63) {
		return binary.AppendVarint(append(dst, tagValue), int64(lo))
	}
	dst = binary.LittleEndian.AppendUint64(append(dst, tagWide), uint64(hi))
	return binary.LittleEndian.AppendUint64(dst, lo)
}

// skipValue returns the length of the encoded value at the start of b for col, 0 when b is
// damaged.
func skipValue(col pipeline.Column, b []byte) int {
	if len(b) == 0 {
		return 0
	}
	switch b[0] {
	case tagNull:
		return 1
	case tagWide:
		if len(b) < 17 {
			return 0
		}
		return 17
	case tagValue:
	default:
		return 0
	}
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON, pipeline.TypeVarbinary:
		n, k := binary.Uvarint(b[1:])
		if k <= 0 || uint64(len(b)-1-k) < n {
			return 0
		}
		return 1 + k + int(n)
	case pipeline.TypeBoolean:
		if len(b) < 2 {
			return 0
		}
		return 2
	case pipeline.TypeFloat:
		if len(b) < 5 {
			return 0
		}
		return 5
	case pipeline.TypeDouble:
		if len(b) < 9 {
			return 0
		}
		return 9
	}
	_, k := binary.Varint(b[1:])
	if k <= 0 {
		return 0
	}
	return 1 + k
}

// splitValues cuts an encoded run of values, one per column of cols, appending each value's
// encoding to into; ok is false when b does not hold exactly that.
func splitValues(cols []pipeline.Column, b []byte, into [][]byte) ([][]byte, bool) {
	for _, c := range cols {
		n := skipValue(c, b)
		if n == 0 {
			return into, false
		}
		into = append(into, b[:n])
		b = b[n:]
	}
	return into, len(b) == 0
}

// decodeValue turns one encoded value of col back into a pipeline.Value, in the conventions of
// docs/internals.md "Values" (what a LookupTarget takes as keys).
func decodeValue(col pipeline.Column, b []byte) pipeline.Value {
	if len(b) == 0 || b[0] == tagNull {
		return pipeline.Null
	}
	if b[0] == tagWide {
		hi := int64(binary.LittleEndian.Uint64(b[1:]))
		lo := binary.LittleEndian.Uint64(b[9:])
		return pipeline.Decimal(string(files.Dec128{Hi: hi, Lo: lo}.AppendText(nil, col.Scale)))
	}
	p := b[1:]
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		n, k := binary.Uvarint(p)
		return pipeline.Text(string(p[k : k+int(n)]))
	case pipeline.TypeVarbinary:
		n, k := binary.Uvarint(p)
		return pipeline.Bytes(string(p[k : k+int(n)]))
	case pipeline.TypeBoolean:
		return pipeline.Bool(p[0] != 0)
	case pipeline.TypeFloat:
		return pipeline.Float(float64(math.Float32frombits(binary.LittleEndian.Uint32(p))))
	case pipeline.TypeDouble:
		return pipeline.Float(math.Float64frombits(binary.LittleEndian.Uint64(p)))
	}
	i, _ := binary.Varint(p)
	if col.Type == pipeline.TypeDecimal {
		neg := i < 0
		hi := int64(0)
		if neg {
			hi = -1
		}
		s := files.Dec128{Hi: hi, Lo: uint64(i)}.AppendText(nil, col.Scale)
		return pipeline.DecimalUnscaled(string(s), i, col.Scale)
	}
	return pipeline.Int(i)
}

// maxShown caps a value's text in examples.
const maxShown = 120

// render shows an encoded value for people: NULL, timestamps in UTC with milliseconds, dates
// as yyyy-mm-dd, binary as hex, long text cut. VARCHAR text that would read as another value is
// quoted (strconv.Quote): "NULL", which a null shows as, the empty string, and text that begins
// with a quote, as a quoted value with escapes does (the terminal quotes text that does not print).
func render(col pipeline.Column, b []byte) string {
	s := renderWhole(col, b)
	quoted := col.Type == pipeline.TypeVarchar && (s == "" || s[0] == '"' || s == "NULL" && !decodeValue(col, b).IsNull())
	more := ""
	if len(s) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, more = s[:cut], fmt.Sprintf("... (%d bytes)", len(s))
	}
	if quoted {
		s = strconv.Quote(s)
	}
	return s + more
}

// renderWhole is render without cutting long text: a key to name in full (ExtraKeys).
func renderWhole(col pipeline.Column, b []byte) string {
	v := decodeValue(col, b)
	if v.IsNull() {
		return "NULL"
	}
	var s string
	switch col.Type {
	case pipeline.TypeTimestamp:
		s = time.UnixMilli(v.Num).UTC().Format("2006-01-02T15:04:05.000Z")
	case pipeline.TypeDate:
		s = time.Unix(v.Num*86400, 0).UTC().Format("2006-01-02")
	case pipeline.TypeVarbinary:
		s = "0x" + hex.EncodeToString([]byte(v.Str))
	case pipeline.TypeFloat:
		s = strconv.FormatFloat(v.Float(), 'g', -1, 32)
	default:
		s = v.String()
	}
	return s
}

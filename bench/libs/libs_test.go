package libs_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/decimal128"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/klauspost/compress/zstd"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/source/cqlvalue"
)

// an orders message or JSON Lines record, as bench/kafka produces them
const order = `{"userid":"user0012345","orderid":1000001234,"channel":"taobao","ts":"2024-05-01T10:00:00.123Z","status":"paid","location":"city-123","amount":"123.45"}`

// BenchmarkJSONObject: the members of a JSON object as raw text, as the Kafka decoder and the JSON
// Lines source need them (source/cqlvalue.ObjectFields), against encoding/json.
func BenchmarkJSONObject(b *testing.B) {
	b.Run("rekey-ObjectFields", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			if err := cqlvalue.ObjectFields(order, func(key, raw string) { n += len(raw) }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json-RawMessage-map", func(b *testing.B) {
		b.ReportAllocs()
		data := []byte(order)
		for b.Loop() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json-Decoder-Token", func(b *testing.B) {
		b.ReportAllocs()
		r := bytes.NewReader(nil)
		for b.Loop() {
			r.Reset([]byte(order))
			d := json.NewDecoder(r)
			d.UseNumber()
			for {
				if _, err := d.Token(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkTimestamp: a timestamp field to epoch milliseconds. source/cqlvalue's ParseText reads
// in one pass every layout it accepts (T or space, optional seconds and fraction, Z, ±hh[[:]mm],
// UTC, no zone, a date alone, an integer epoch) and refuses to round; time.Parse needs one layout
// per form, tried in turn: RFC 3339 (its first) and cqlsh's layout, as Cassandra exports write it.
func BenchmarkTimestamp(b *testing.B) {
	layouts := []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700", "2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999Z0700", "2006-01-02 15:04:05.999999999", "2006-01-02"}
	libParse := func(s string) (time.Time, error) {
		var err error
		for _, l := range layouts {
			var t time.Time
			if t, err = time.Parse(l, s); err == nil {
				return t, nil
			}
		}
		return time.Time{}, err
	}
	ts := cqlvalue.Scalar(cqlvalue.Timestamp)
	for _, in := range []struct{ name, s string }{{"RFC3339", "2024-05-01T10:00:00.123Z"}, {"cqlsh", "2024-05-01 10:00:00.123000+0000"}} {
		b.Run(in.name+"/rekey-ParseText", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v, err := ts.ParseText(in.s); err != nil || v.Num != 1714557600123 {
					b.Fatal(v, err)
				}
			}
		})
		b.Run(in.name+"/time.Parse-layouts", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if t, err := libParse(in.s); err != nil || t.UnixMilli() != 1714557600123 {
					b.Fatal(t, err)
				}
			}
		})
	}
}

// BenchmarkDecimal: a DECIMAL(12,2) field's text to its 128-bit unscaled value, exactly or a
// reject (sink/files.DecimalValue, integer arithmetic below 19 digits), against arrow's
// decimal128.FromString (big.Float; it also rounds digits past the scale, where rekey rejects).
func BenchmarkDecimal(b *testing.B) {
	col := pipeline.Column{Name: "amount", Type: pipeline.TypeDecimal, Precision: 12, Scale: 2}
	v := pipeline.Decimal("123.45")
	b.Run("rekey-DecimalValue", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d, err := files.DecimalValue(col, v); err != nil || d.Lo != 12345 {
				b.Fatal(d, err)
			}
		}
	})
	b.Run("arrow-decimal128.FromString", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d, err := decimal128.FromString(v.Str, 12, 2); err != nil || d.LowBits() != 12345 {
				b.Fatal(d, err)
			}
		}
	})
}

// BenchmarkZstdPage: compressing a 1 MiB Parquet page at level 1. arrow/go v15's registered codec
// (this package does not import sink/parquet, so it is arrow's own) builds a zstd encoder per
// page; sink/parquet/zstd.go replaces it with one encoder per level, reused.
func BenchmarkZstdPage(b *testing.B) {
	page := orderPage(1 << 20)
	arrow, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("arrow-v15-codec", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		var dst []byte
		for b.Loop() {
			dst = arrow.EncodeLevel(dst, page, 1)
		}
	})
	b.Run("rekey-reused-encoder", func(b *testing.B) {
		// the options of sink/parquet/zstd.go
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(1)), zstd.WithZeroFrames(true),
			zstd.WithEncoderCRC(false), zstd.WithWindowSize(4<<20), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		var dst []byte
		for b.Loop() {
			dst = enc.EncodeAll(page, dst[:0])
		}
	})
}

// orderPage is n bytes of plain-encoded orders strings (length-prefixed, as a BYTE_ARRAY page).
func orderPage(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var p []byte
	for len(p) < n {
		s := fmt.Sprintf("user%07d|%d|city-%03d|%d.%02d", rng.IntN(500000), 1000000000+rng.IntN(1<<30), rng.IntN(1000), rng.IntN(5000), rng.IntN(100))
		p = append(p, byte(len(s)), 0, 0, 0)
		p = append(p, s...)
	}
	return p[:n]
}

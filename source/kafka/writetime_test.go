package kafka

import (
	"testing"
)

// The Cassandra connector's source carries the mutation's write time (its partition update's
// newest cell timestamp): ts_us in microseconds (newer Debezium), ts_ms in milliseconds. A change
// of another connector has none: its source.ts_ms is a commit time, not a cell timestamp.
func TestDecodeCassandraWriteTime(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatDebezium}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	cell := func(v string) string { return `{"value":` + v + `,"deletion_ts":null,"set":true}` }
	after := `{"userid":` + cell(`"u1"`) + `,"orderid":` + cell(`1`) + `}`
	for _, tc := range []struct {
		name, value string
		want        int64
	}{
		{"ts_us", `{"op":"i","source":{"connector":"cassandra","ts_ms":1700000000123,"ts_us":1700000000123456},"after":` + after + `}`, 1700000000123},
		{"ts_ms only", `{"op":"u","source":{"connector":"cassandra","ts_ms":1700000000123},"after":` + after + `}`, 1700000000123},
		{"delete", `{"op":"d","source":{"ts_us":1700000000999000,"connector":"cassandra"},"after":` + after + `}`, 1700000000999},
		{"range tombstone", `{"op":"r","source":{"connector":"cassandra","ts_us":1700000001000000},"after":{"userid":` + cell(`"u1"`) +
			`,"_range_start":{"method":"INCL_START_BOUND","values":[]},"_range_end":{"method":"INCL_END_BOUND","values":[]}}}`, 1700000001000},
		{"wrapped", `{"schema":{},"payload":{"op":"i","source":{"connector":"cassandra","ts_us":1700000000123456},"after":` + after + `}}`, 1700000000123},
		{"mysql connector", `{"op":"c","source":{"connector":"mysql","ts_ms":1700000000123},"after":{"userid":"u1","orderid":1}}`, 0},
		{"no source", `{"op":"i","after":` + after + `}`, 0},
	} {
		chs := d.Decode(nil, nil, []byte(tc.value))
		if len(chs) != 1 {
			t.Fatalf("%s: %d changes", tc.name, len(chs))
		}
		if chs[0].WriteTime != tc.want {
			t.Errorf("%s: write time %d, want %d (%s)", tc.name, chs[0].WriteTime, tc.want, show(chs))
		}
		d.Reset()
	}
}

// A Cassandra write made before the first millisecond (USING TIMESTAMP 0, which applications
// write so that every later write wins, or a negative time) has a write time as a copied cell
// of it does, 1 ms, which every later write still beats: it was taken for none and the change
// rejected (no_write_time), though its event carries its time.
func TestDecodeCassandraWriteTimeBeforeTheFirstMillisecond(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatDebezium}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	cell := func(v string) string { return `{"value":` + v + `,"deletion_ts":null,"set":true}` }
	after := `{"userid":` + cell(`"u1"`) + `,"orderid":` + cell(`1`) + `}`
	for _, tc := range []struct {
		name, value string
		want        int64
	}{
		{"ts_us 0", `{"op":"i","source":{"connector":"cassandra","ts_ms":0,"ts_us":0},"after":` + after + `}`, 1},
		{"ts_us 999", `{"op":"u","source":{"connector":"cassandra","ts_ms":0,"ts_us":999},"after":` + after + `}`, 1},
		{"ts_us negative", `{"op":"i","source":{"connector":"cassandra","ts_us":-5000},"after":` + after + `}`, 1},
		{"ts_ms 0 only", `{"op":"i","source":{"connector":"cassandra","ts_ms":0},"after":` + after + `}`, 1},
		{"no time", `{"op":"i","source":{"connector":"cassandra"},"after":` + after + `}`, 0},
	} {
		chs := d.Decode(nil, nil, []byte(tc.value))
		if len(chs) != 1 {
			t.Fatalf("%s: %d changes", tc.name, len(chs))
		}
		if chs[0].WriteTime != tc.want {
			t.Errorf("%s: write time %d, want %d (%s)", tc.name, chs[0].WriteTime, tc.want, show(chs))
		}
		d.Reset()
	}
}

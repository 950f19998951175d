package cassandra

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"gopkg.in/inf.v0"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cqlvalue"
)

func native(t gocql.Type) gocql.TypeInfo { return gocql.NewNativeType(4, t, "") }

func decodeOne(t *testing.T, info gocql.TypeInfo, cqlType string, data []byte) (pipeline.Value, error) {
	t.Helper()
	d, err := newColDecoder("c", info, cqlType, false)
	if err != nil {
		t.Fatal(err)
	}
	var a arena
	var scratch []byte
	return d.decode(data, &a, &scratch)
}

func infDec(unscaled *big.Int, scale int32) *inf.Dec {
	return inf.NewDecBig(unscaled, inf.Scale(scale))
}

func TestDecimalMatchesCqlvalue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dt, _ := cqlvalue.ParseType("decimal")
	dec, err := newColDecoder("c", native(gocql.TypeDecimal), "decimal", false)
	if err != nil {
		t.Fatal(err)
	}
	var a arena
	var scratch []byte
	for i := 0; i < 20000; i++ {
		var unscaled *big.Int
		switch i % 4 {
		case 0:
			unscaled = big.NewInt(rng.Int64N(2000) - 1000)
		case 1:
			unscaled = big.NewInt(int64(rng.Uint64()))
		default:
			unscaled = new(big.Int)
			for k := rng.IntN(4) + 1; k > 0; k-- {
				unscaled.Lsh(unscaled, 64).Or(unscaled, new(big.Int).SetUint64(rng.Uint64()))
			}
			if rng.IntN(2) == 0 {
				unscaled.Neg(unscaled)
			}
		}
		scale := int32(rng.IntN(60) - 20)
		data, err := gocql.Marshal(native(gocql.TypeDecimal), infDec(unscaled, scale))
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendDecimal(nil, data)
		if err != nil {
			t.Fatal(err)
		}
		// cqlvalue's canonical form of unscaled × 10^-scale written with an exponent
		want, err := dt.ParseText(fmt.Sprintf("%sE%d", unscaled, -scale))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want.Str {
			t.Fatalf("unscaled %s scale %d: got %s, want %s", unscaled, scale, got, want.Str)
		}
		// a decoded cell (one arena for all, so that cells cross its blocks) holds the same
		// text, and its number when that fits 64 bits and the scale is not negative
		v, err := dec.decode(data, &a, &scratch)
		if err != nil || v.Str != want.Str || v.Kind != pipeline.KindDecimal {
			t.Fatalf("unscaled %s scale %d: decoded %+v, %v; want %s", unscaled, scale, v, err, want.Str)
		}
		n, sc, ok := v.Unscaled()
		if fits := unscaled.IsInt64() && scale >= 0; ok != fits || fits && (n != unscaled.Int64() || sc != int(scale)) {
			t.Fatalf("unscaled %s scale %d: decoded number %d scale %d (%v)", unscaled, scale, n, sc, ok)
		}
	}
	for _, cell := range [][]byte{{0x7f, 0, 0, 0, 1}, {0x80, 0, 0, 0, 1}, {0, 0, 0x03, 0xe9, 1}, {0xff, 0xff, 0xfc, 0x17, 1}, {0, 0, 0, 1}} {
		if v, err := dec.decode(cell, &a, &scratch); err == nil {
			t.Errorf("cell %x decoded as %+v", cell, v)
		}
	}
	if _, err := appendDecimal(nil, []byte{0x7f, 0, 0, 0, 1}); err == nil {
		t.Error("huge scale accepted")
	}
}

func TestVarint(t *testing.T) {
	cases := []struct {
		n    string
		data []byte
	}{
		{"0", []byte{0}},
		{"-1", []byte{0xff}},
		{"127", []byte{0x7f}},
		{"128", []byte{0, 0x80}},
		{"-129", []byte{0xff, 0x7f}},
		{"9223372036854775807", []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"9223372036854775807", []byte{0, 0, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}, // redundant sign bytes
		{"-9223372036854775808", []byte{0xff, 0x80, 0, 0, 0, 0, 0, 0, 0}},
		{"9223372036854775808", []byte{0, 0x80, 0, 0, 0, 0, 0, 0, 0}},
		{"-9223372036854775809", []byte{0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"-123456789012345678901234567890", nil},
	}
	vt, _ := cqlvalue.ParseType("varint")
	for _, c := range cases {
		data := c.data
		if data == nil {
			n, _ := new(big.Int).SetString(c.n, 10)
			var err error
			if data, err = gocql.Marshal(native(gocql.TypeVarint), n); err != nil {
				t.Fatal(err)
			}
		}
		got, err := decodeOne(t, native(gocql.TypeVarint), "varint", data)
		want, _ := vt.ParseText(c.n)
		if err != nil || got != want {
			t.Errorf("% x: got %v %v, want %v", data, got, err, want)
		}
	}
}

func TestScalarEdges(t *testing.T) {
	// empty cells: "" for text and blob, null otherwise
	for _, typ := range []gocql.Type{gocql.TypeInt, gocql.TypeBigInt, gocql.TypeTimestamp, gocql.TypeUUID, gocql.TypeDecimal, gocql.TypeVarint, gocql.TypeBoolean, gocql.TypeDouble, gocql.TypeInet} {
		v, err := decodeOne(t, native(typ), "", []byte{})
		if err != nil || !v.IsNull() {
			t.Errorf("%s empty: %v %v", typ, v, err)
		}
	}
	if v, _ := decodeOne(t, native(gocql.TypeVarchar), "text", []byte{}); v != pipeline.Text("") {
		t.Errorf("empty text: %v", v)
	}
	if v, _ := decodeOne(t, native(gocql.TypeBlob), "blob", []byte{}); v != pipeline.Bytes("") {
		t.Errorf("empty blob: %v", v)
	}
	if v, _ := decodeOne(t, native(gocql.TypeVarchar), "text", nil); !v.IsNull() {
		t.Errorf("null text: %v", v)
	}
	// malformed lengths are errors
	for _, typ := range []gocql.Type{gocql.TypeInt, gocql.TypeBigInt, gocql.TypeUUID, gocql.TypeDate, gocql.TypeInet, gocql.TypeFloat} {
		if _, err := decodeOne(t, native(typ), "", []byte{1, 2, 3}); err == nil {
			t.Errorf("%s accepted 3 bytes", typ)
		}
	}
	// an IPv4-mapped IPv6 address keeps its form, as cqlvalue writes it
	mapped := append(make([]byte, 10), 0xff, 0xff, 10, 0, 0, 1)
	if v, _ := decodeOne(t, native(gocql.TypeInet), "inet", mapped); v.Str != "::ffff:10.0.0.1" {
		t.Errorf("mapped: %q", v.Str)
	}
	// dates around the epoch
	for days, want := range map[uint32]int64{1 << 31: 0, 1<<31 - 1: -1, 0: -1 << 31, math.MaxUint32: 1<<31 - 1} {
		v, _ := decodeOne(t, native(gocql.TypeDate), "date", binary.BigEndian.AppendUint32(nil, days))
		if v.Num != want {
			t.Errorf("date %d: %d, want %d", days, v.Num, want)
		}
	}
	// writetime: microseconds to milliseconds, rounding down
	d, _ := newColDecoder("writetime_x", native(gocql.TypeBigInt), "", true)
	for us, ms := range map[int64]int64{1704164645678999: 1704164645678, 0: 0, -1: -1, -1000: -1, -1001: -2} {
		var a arena
		var sc []byte
		v, _ := d.decode(binary.BigEndian.AppendUint64(nil, uint64(us)), &a, &sc)
		if v.Num != ms || v.Kind != pipeline.KindInt {
			t.Errorf("writetime %d us: %v, want %d ms", us, v, ms)
		}
	}
}

func TestJSONOfTuplesAndUDTs(t *testing.T) {
	udt := gocql.UDTTypeInfo{NativeType: gocql.NewNativeType(4, gocql.TypeUDT, ""), Name: "addr", Elements: []gocql.UDTField{
		{Name: "street", Type: native(gocql.TypeVarchar)},
		{Name: "zip", Type: native(gocql.TypeInt)},
		{Name: "since", Type: native(gocql.TypeDate)},
		{Name: "tags", Type: gocql.CollectionType{NativeType: gocql.NewNativeType(4, gocql.TypeSet, ""), Elem: native(gocql.TypeVarchar)}},
	}}
	data, err := gocql.Marshal(udt, map[string]any{"street": "Main \"St\"", "zip": 12345, "since": time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), "tags": []string{"b", "a"}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeOne(t, udt, "frozen<addr>", data)
	want := `{"street":"Main \"St\"","zip":12345,"since":"1969-12-31","tags":["b","a"]}`
	if err != nil || v.Str != want || v.Kind != pipeline.KindText {
		t.Errorf("udt: %v %v\nwant %s", v, err, want)
	}
	// a UDT value written before fields were added has fewer components: the rest are null
	short := data[:4+len("Main \"St\"")]
	v, err = decodeOne(t, udt, "frozen<addr>", short)
	if err != nil || v.Str != `{"street":"Main \"St\"","zip":null,"since":null,"tags":null}` {
		t.Errorf("short udt: %v %v", v, err)
	}
	// maps with non-text keys: keys quoted, as cqlvalue does
	mt := gocql.CollectionType{NativeType: gocql.NewNativeType(4, gocql.TypeMap, ""), Key: native(gocql.TypeTimestamp), Elem: native(gocql.TypeBlob)}
	data, _ = gocql.Marshal(mt, map[int64][]byte{-1: {1}})
	v, err = decodeOne(t, mt, "map<timestamp, blob>", data)
	if err != nil || v.Str != `{"1969-12-31T23:59:59.999Z":"0x01"}` {
		t.Errorf("map: %v %v", v, err)
	}
	// truncated collections are errors, not panics
	for n := 0; n < len(data); n++ {
		if _, err := decodeOne(t, mt, "map<timestamp, blob>", data[:n]); err == nil && n > 0 {
			t.Errorf("truncated at %d accepted", n)
		}
	}
}

func TestSplitRing(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ tokens, splits int }{{1, 1}, {1, 7}, {3, 1}, {16, 16}, {16, 100}, {256, 64}, {48, 1000}} {
		tokens := make([]int64, tc.tokens)
		for i := range tokens {
			tokens[i] = int64(rng.Uint64())
		}
		rs, err := SplitRing(tokens, tc.splits)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckTiling(rs); err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if len(rs) < tc.tokens || len(rs) < tc.splits || len(rs) > max(tc.splits, tc.tokens)+tc.tokens+2 {
			t.Errorf("%+v: %d ranges", tc, len(rs))
		}
		// every range lies within one ring range
		ring := sortUnique(tokens)
		for _, r := range rs {
			if e := ownerEnd(ring, r.End); ownerEnd(ring, r.Start+1) != e {
				t.Fatalf("%s spans two ring ranges", r)
			}
		}
		// names round-trip
		for _, r := range rs {
			p, err := ParseRange(r.Name())
			if err != nil || p != r {
				t.Fatalf("%s: %v %v", r.Name(), p, err)
			}
		}
		again, _ := SplitRing(append([]int64(nil), tokens...), tc.splits)
		if fmt.Sprint(again) != fmt.Sprint(rs) {
			t.Fatal("not deterministic")
		}
	}
	rs, _ := SplitRing([]int64{0}, 4)
	if got := fmt.Sprint(rs); got != "[range(-9223372036854775808,-4611686018427387904] range(-4611686018427387904,0] range(0,4611686018427387904] range(4611686018427387904,9223372036854775807]]" {
		t.Errorf("one token, 4 splits: %s", got)
	}
	if _, err := ParseRange("range(5,5]"); err == nil {
		t.Error("empty range accepted")
	}
	if err := CheckTiling([]Range{{MinToken, 0}, {1, MaxToken}}); err == nil {
		t.Error("gap not found")
	}
	if err := CheckTiling([]Range{{MinToken, 5}, {1, MaxToken}}); err == nil {
		t.Error("overlap not found")
	}
}

func TestShards(t *testing.T) {
	rs, _ := SplitRing([]int64{-100, 0, 100}, 50)
	seen := map[Range]int{}
	for i := 0; i < 3; i++ {
		for _, r := range takeShard(Shard{Index: i, Count: 3}, rs) {
			seen[r]++
		}
	}
	if len(seen) != len(rs) {
		t.Fatalf("shards hold %d of %d ranges", len(seen), len(rs))
	}
	for r, n := range seen {
		if n != 1 {
			t.Fatalf("%s in %d shards", r, n)
		}
	}
	// one spelling per shard: spaces, signs and leading zeros were read as the same shard
	for _, bad := range []string{"3/3", "-1/2", "1", "a/b", "0/0", " 1/4", "1/4 ", "01/04", "1/04", "+1/4", "1 / 4"} {
		if _, err := pipeline.ParseShard(bad); err == nil {
			t.Errorf("pipeline.ParseShard(%q) accepted", bad)
		}
	}
	if s, err := pipeline.ParseShard("2/5"); err != nil || s != (Shard{Index: 2, Count: 5}) {
		t.Errorf("ParseShard: %v %v", s, err)
	}
}

func TestCursor(t *testing.T) {
	for _, c := range []struct {
		rows  int64
		state []byte
	}{{0, nil}, {5000, []byte{1, 2, 3, 0xff}}, {1 << 40, []byte("x")}} {
		rows, state, err := decodeCursor(encodeCursor(c.rows, c.state))
		if err != nil || rows != c.rows || string(state) != string(c.state) {
			t.Errorf("%v: %d %v %v", c, rows, state, err)
		}
	}
	for _, bad := range []string{"", "off=1", "rows=-1", "rows=1;state=", "rows=1;state=!!", "rows=x"} {
		if _, _, err := decodeCursor(bad); err == nil {
			t.Errorf("decodeCursor(%q) accepted", bad)
		}
	}
}

func TestParseURI(t *testing.T) {
	cfg, err := ParseURI("cassandra://h1,h2:9142,[::1]/shop/orders?consistency=local_quorum&dc=dc1&page_size=100&splits=64&workers=3&rate=1000&writetime=a,b&ttl=a&shard=1/3&retries=0&timeout=30s")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Hosts, " "); got != "h1:9142 h2:9142 [::1]:9142" {
		t.Errorf("hosts %s", got)
	}
	if cfg.Keyspace != "shop" || cfg.Table != "orders" || cfg.Consistency != "LOCAL_QUORUM" || cfg.DC != "dc1" ||
		cfg.PageSize != 100 || cfg.Splits != 64 || cfg.Workers != 3 || cfg.Rate != 1000 ||
		strings.Join(cfg.WriteTime, ",") != "a,b" || strings.Join(cfg.TTL, ",") != "a" ||
		cfg.Shard != (Shard{Index: 1, Count: 3}) || cfg.Retries != -1 || cfg.Timeout != 30*time.Second {
		t.Errorf("%+v", cfg)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cfg.Validate())
	if cfg.Retries != 0 {
		t.Errorf("retries=0 became %d", cfg.Retries)
	}
	cfg, err = ParseURI("cassandra://app@db.example.com/ks/t")
	must(err)
	if cfg.Username != "app" || cfg.Hosts[0] != "db.example.com:9042" {
		t.Errorf("%+v", cfg)
	}
	for _, bad := range []string{
		"cassandra://u:secret@h/ks/t", "cassandra://h/ks/t?password=x", "cassandra://h/ks/t?bogus=1",
		"cassandra:///ks/t", "cassandra://h/ks", "cassandra://h:99999/ks/t", "cassandra://h/ks/t?page_size=0",
		"cassandra://h/ks/t?shard=3/3", "cql://h/ks/t",
	} {
		cfg, err := ParseURI(bad)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil {
			t.Errorf("%s accepted", bad)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error shows the password: %v", bad, err)
		}
	}
	bad := Config{Hosts: []string{"h"}, Keyspace: "k", Table: "t", Consistency: "SOMETIMES", TLS: TLSConfig{CertFile: "c"}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "consistency") || !strings.Contains(err.Error(), "key file") {
		t.Errorf("Validate: %v", err)
	}
}

func TestRetryable(t *testing.T) {
	for _, err := range []error{gocql.ErrTimeoutNoResponse, gocql.ErrConnectionClosed, gocql.ErrNoConnections,
		fmt.Errorf("wrapped: %w", gocql.ErrTimeoutNoResponse), &gocql.RequestErrReadTimeout{}, &gocql.RequestErrUnavailable{},
		// the driver's own cancellation (a connection closed while it prepared the statement):
		// fetchPage returns the run's own at once, before asking retryable
		context.Canceled} {
		if !retryable(err) {
			t.Errorf("%v not retryable", err)
		}
	}
	for _, err := range []error{fmt.Errorf("syntax"), gocql.ErrNotFound} {
		if retryable(err) {
			t.Errorf("%v retryable", err)
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	// the same escaping as cqlvalue: compare through a list<text> round trip
	lt, _ := cqlvalue.ParseType("list<text>")
	for _, s := range []string{"", "a\"b\\c", "\x00\x1f\t\n\r", "é漢🎉", "<>&", "\xff"} {
		js := string(cqlvalue.AppendJSONString([]byte("["), s)) + "]"
		v, err := lt.ParseText(js)
		if err != nil || v.Str != js && s != "\xff" {
			t.Errorf("%q: %s vs %v %v", s, js, v.Str, err)
		}
	}
}

func TestTLSConfig(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rekey test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(crand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile := filepath.Join(dir, "cert.pem")
	keyFile := filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)

	cfg := Config{Hosts: []string{"h"}, Keyspace: "k", Table: "t", TLS: TLSConfig{CAFile: certFile, CertFile: certFile, KeyFile: keyFile}}
	if err := cfg.Validate(); err != nil || !cfg.TLS.Enabled {
		t.Fatalf("a CA file turns TLS on: %v %v", cfg.TLS.Enabled, err)
	}
	tc, err := cfg.TLS.tlsConfig()
	if err != nil || tc.RootCAs == nil || len(tc.Certificates) != 1 || tc.InsecureSkipVerify {
		t.Fatalf("tls config %+v %v", tc, err)
	}
	if _, err := (TLSConfig{CAFile: keyFile}).tlsConfig(); err == nil {
		t.Error("a key as CA file accepted")
	}
	if _, err := (TLSConfig{CAFile: filepath.Join(dir, "missing.pem")}).tlsConfig(); err == nil {
		t.Error("a missing CA file accepted")
	}
	if tc, _ := (TLSConfig{SkipVerify: true}).tlsConfig(); !tc.InsecureSkipVerify {
		t.Error("skip verify ignored")
	}
}

// A set<double> as Cassandra sends it, in its order (Double.compare: -0 before 0, NaN last):
// every element is read, none taken for a duplicate of its neighbour.
func TestSetOfDoublesKeepsEveryElement(t *testing.T) {
	st := gocql.CollectionType{NativeType: gocql.NewNativeType(4, gocql.TypeSet, ""), Elem: native(gocql.TypeDouble)}
	data, err := gocql.Marshal(st, []float64{math.Inf(-1), math.Copysign(0, -1), 0, 1, math.NaN()})
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeOne(t, st, "set<double>", data)
	if want := `["-Infinity",-0,0,1,"NaN"]`; err != nil || v.Str != want {
		t.Errorf("set<double>: %q %v, want %s", v.Str, err, want)
	}
}

// A one-token ring whose token is at the end of the ring (initial_token -9223372036854775808,
// a common choice) read as one range: the whole ring, once, under a name that parses back.
func TestSplitRingOneTokenAtTheEnd(t *testing.T) {
	for _, tk := range []int64{MinToken, MaxToken, MinToken + 1, MaxToken - 1, 0} {
		for _, splits := range []int{1, 2, 5} {
			rs, err := SplitRing([]int64{tk}, splits)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckTiling(rs); err != nil {
				t.Errorf("token %d, splits %d: %v: %v", tk, splits, rs, err)
			}
			for _, r := range rs {
				if _, err := ParseRange(r.Name()); err != nil {
					t.Errorf("token %d, splits %d: %v", tk, splits, err)
				}
			}
		}
	}
}

// TestConsistencyANYRefusedForReads pins that consistency=ANY, which Cassandra takes for writes
// only, is refused when the URI is checked, with the levels a scan may use. Before, it was
// accepted (the error for a bad level even offered it) and every range's first page failed
// with Cassandra's "ANY ConsistencyLevel is only supported for writes", after the ring was read
// and the output opened.
func TestConsistencyANYRefusedForReads(t *testing.T) {
	for _, uri := range []string{"cassandra://h/k/t?consistency=ANY", "cassandra://h/k/t?consistency=any"} {
		cfg, err := ParseURI(uri)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), "ANY") || !strings.Contains(err.Error(), "LOCAL_QUORUM") {
			t.Errorf("%s: %v, want a refusal naming ANY and the read levels", uri, err)
		}
	}
	// the message for an unknown level no longer offers ANY
	cfg := Config{Hosts: []string{"h"}, Keyspace: "k", Table: "t", Consistency: "SOMETIMES"}
	if err := cfg.Validate(); err == nil || strings.Contains(err.Error(), "ANY,") {
		t.Errorf("Validate of SOMETIMES: %v", err)
	}
}

// TestEmptyParameterRefused pins that a URI parameter given without a value (dc=, as a
// template with an unset variable writes it) is refused, naming it. Before, dc= was taken as no
// data center and the scan read from every data center, consistency= as LOCAL_ONE, writetime=
// as no column: each without a word.
func TestEmptyParameterRefused(t *testing.T) {
	for _, p := range []string{"dc", "consistency", "writetime", "ttl", "DC"} {
		uri := "cassandra://h/k/t?" + p + "="
		cfg, err := ParseURI(uri)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), strings.ToLower(p)+"= has no value") {
			t.Errorf("%s: %v, want a refusal naming %s=", uri, err, strings.ToLower(p))
		}
	}
}

package kafka

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// maxFetchVersion is the newest Fetch request version FetchPartition sends: the last one that
// names topics rather than topic ids and has no tagged fields (Kafka 2.3 and later, Kafka 4
// included); minFetchVersion the oldest, the first whose responses hold record batches (0.11).
// The request and response layouts are Kafka's FetchRequest.json and FetchResponse.json.
const (
	fetchAPIKey     = 1
	maxFetchVersion = 11
	minFetchVersion = 4
)

// leaderConn is a connection to a partition's leader that kafka-go dialled (TLS, SASL, API
// versions) and still serves the offset requests of, and that FetchPartition sends its own Fetch
// requests on: it reads the record sets they return with recordSet instead of kafka-go's
// per-message parsing, which allocated every message's key and value.
type leaderConn struct {
	*kafkago.Conn
	nc        net.Conn // what Conn reads and writes, under it (after TLS)
	clientID  string
	topic     string
	partition int32
	version   int16 // the Fetch version sent; 0: the broker has none FetchPartition sends
	corr      int32
	req       []byte
	// spare is a response buffer no message refers to (every batch in it was compressed): the
	// next response is read into it rather than into a new buffer, which the runtime zeroes.
	spare []byte
}

// dialLeader dials the partition's leader as dialer.DialLeader does, and keeps the connection
// kafka-go's Conn speaks on.
func dialLeader(ctx context.Context, dialer *kafkago.Dialer, broker, topic string, partition int) (*leaderConn, error) {
	var mu sync.Mutex
	var dialled []net.Conn
	d := connDialer(dialer, func(c net.Conn) {
		mu.Lock()
		dialled = append(dialled, c)
		mu.Unlock()
	})
	p, err := lookupPartition(ctx, d, broker, topic, partition)
	if err != nil {
		return nil, err
	}
	conn, err := d.DialPartition(ctx, "tcp", broker, p)
	if err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range dialled {
		if c.LocalAddr().String() == conn.LocalAddr().String() {
			return &leaderConn{Conn: conn, nc: c, clientID: dialer.ClientID, topic: topic, partition: int32(partition)}, nil
		}
	}
	conn.Close()
	return nil, fmt.Errorf("kafka: the connection to the leader of %s is not one dialled", Stream(topic, partition))
}

// lookupPartition asks broker once for the partition's leader. kafka-go's LookupPartition (which
// its DialLeader calls) asks again for ever while the answer is a passing error, an unknown topic
// among them, so the fetch of a deleted topic stood still without a word; FetchPartition retries
// this look-up itself, warning, and gives a topic unknown for long up (topicGoneWait).
func lookupPartition(ctx context.Context, d *kafkago.Dialer, broker, topic string, partition int) (kafkago.Partition, error) {
	c, err := d.DialContext(ctx, "tcp", broker)
	if err != nil {
		return kafkago.Partition{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	parts, err := c.ReadPartitions(topic)
	if err != nil {
		return kafkago.Partition{}, err
	}
	for _, p := range parts {
		if p.ID == partition {
			return p, nil
		}
	}
	return kafkago.Partition{}, kafkago.UnknownTopicOrPartition
}

// connDialer returns a copy of d that does TLS itself and hands got each connection it makes:
// kafka-go wraps a DialFunc's connection in TLS after the fact, so the connection its Conn
// speaks on is visible only when the DialFunc makes it. The TLS is kafka-go's: same config, the
// server name inferred from the address as kafka-go does, the handshake bound to ctx.
func connDialer(d *kafkago.Dialer, got func(net.Conn)) *kafkago.Dialer {
	c := *d
	cfg, dial := d.TLS, d.DialFunc
	if dial == nil {
		dial = (&net.Dialer{LocalAddr: d.LocalAddr, FallbackDelay: d.FallbackDelay, KeepAlive: d.KeepAlive}).DialContext
	}
	c.TLS = nil
	c.DialFunc = func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		if cfg != nil {
			tc := cfg
			if tc.ServerName == "" {
				tc = cfg.Clone()
				tc.ServerName = address
				if i := strings.LastIndex(address, ":"); i >= 0 {
					tc.ServerName = address[:i]
				}
			}
			t := tls.Client(conn, tc)
			if err := t.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, err
			}
			conn = t
		}
		got(conn)
		return conn, nil
	}
	return &c
}

// negotiate picks the Fetch version to send: the newest the broker and FetchPartition share.
func (c *leaderConn) negotiate() error {
	versions, err := c.ApiVersions()
	if err != nil {
		return err
	}
	for _, v := range versions {
		if v.ApiKey == fetchAPIKey {
			if top := min(v.MaxVersion, maxFetchVersion); top >= minFetchVersion && top >= v.MinVersion {
				c.version = top
			}
		}
	}
	return nil
}

// fetchResult is the partition's part of a fetch response.
type fetchResult struct {
	body          []byte // the response: records is part of it
	records       []byte
	highWaterMark int64
	// lastStable is the partition's last stable offset: a read-committed fetch returns the
	// messages before it only (those after it may still be in an open transaction).
	lastStable int64
	// aborted lists the aborted transactions the records may hold messages of.
	aborted   []abortedTxn
	errorCode int16
}

// fetch sends one Fetch request for the partition at offset and reads its response. The read's
// deadline moves on by margin a chunk, so that a big response on a slow link still arrives.
func (c *leaderConn) fetch(offset int64, maxBytes int, maxWait, margin time.Duration) (fetchResult, error) {
	c.corr++
	if err := c.writeFetch(offset, maxBytes, maxWait); err != nil {
		return fetchResult{}, fmt.Errorf("kafka: fetch request: %w", err)
	}
	c.nc.SetReadDeadline(time.Now().Add(maxWait + margin))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return fetchResult{}, fmt.Errorf("kafka: fetch response: %w", err)
	}
	n := int(int32(binary.BigEndian.Uint32(size[:])))
	if n < 4 {
		return fetchResult{}, fmt.Errorf("kafka: fetch response of %d bytes", n)
	}
	// a buffer of its own, unless no message of the last one refers to it
	body := c.spare
	c.spare = nil
	if cap(body) < n {
		body = make([]byte, n)
	}
	body = body[:n]
	const chunk = 1 << 20
	for i := 0; i < n; i += chunk {
		c.nc.SetReadDeadline(time.Now().Add(margin))
		if _, err := io.ReadFull(c.nc, body[i:min(n, i+chunk)]); err != nil {
			return fetchResult{}, fmt.Errorf("kafka: fetch response: %w", err)
		}
	}
	c.nc.SetReadDeadline(time.Time{})
	if corr := int32(binary.BigEndian.Uint32(body)); corr != c.corr {
		return fetchResult{}, fmt.Errorf("kafka: fetch response: correlation id %d, want %d", corr, c.corr)
	}
	res, err := c.partitionResult(body[4:])
	res.body = body
	return res, err
}

// writeFetch writes a Fetch request for the partition (header v1: api key, version, correlation
// id, client id), without a fetch session, at isolation level read-committed: the broker returns
// the messages of committed transactions and of none (and lists the aborted transactions the
// records hold, for recordSet to leave out), so that no change a producer aborted is applied.
func (c *leaderConn) writeFetch(offset int64, maxBytes int, maxWait time.Duration) error {
	be := binary.BigEndian
	v := c.version
	b := append(c.req[:0], 0, 0, 0, 0)
	b = be.AppendUint16(b, fetchAPIKey)
	b = be.AppendUint16(b, uint16(v))
	b = be.AppendUint32(b, uint32(c.corr))
	b = appendString(b, c.clientID)
	b = be.AppendUint32(b, 0xffffffff) // replica id -1: a consumer
	b = be.AppendUint32(b, uint32(maxWait/time.Millisecond))
	b = be.AppendUint32(b, 1) // min bytes
	// no limit for the response: the partition's (below) binds, one partition a request. kfake,
	// the test broker, leaves a partition's aborted transactions out of a response that the
	// request's limit ends.
	b = be.AppendUint32(b, math.MaxInt32)
	b = append(b, 1) // isolation level: read-committed
	if v >= 7 {
		b = be.AppendUint32(b, 0)          // session id
		b = be.AppendUint32(b, 0xffffffff) // session epoch -1: no session
	}
	b = be.AppendUint32(b, 1) // one topic
	b = appendString(b, c.topic)
	b = be.AppendUint32(b, 1) // one partition
	b = be.AppendUint32(b, uint32(c.partition))
	if v >= 9 {
		b = be.AppendUint32(b, 0xffffffff) // current leader epoch -1: not checked
	}
	b = be.AppendUint64(b, uint64(offset))
	if v >= 5 {
		b = be.AppendUint64(b, ^uint64(0)) // log start offset -1: a consumer's
	}
	b = be.AppendUint32(b, uint32(maxBytes))
	if v >= 7 {
		b = be.AppendUint32(b, 0) // no forgotten topics
	}
	if v >= 11 {
		b = appendString(b, "") // rack id
	}
	be.PutUint32(b, uint32(len(b)-4))
	c.req = b
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.nc.Write(b)
	c.nc.SetWriteDeadline(time.Time{})
	return err
}

func appendString(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...)
}

// partitionResult reads a fetch response's body and finds the partition in it.
func (c *leaderConn) partitionResult(body []byte) (fetchResult, error) {
	r := &wireReader{b: body}
	v := c.version
	r.skip(4) // throttle
	if v >= 7 {
		if code := r.int16(); code != 0 {
			return fetchResult{}, kafkago.Error(code)
		}
		r.skip(4) // session id
	}
	for topics := r.int32(); topics > 0 && r.err == nil; topics-- {
		topic := r.string()
		for parts := r.int32(); parts > 0 && r.err == nil; parts-- {
			var res fetchResult
			p := r.int32()
			res.errorCode = r.int16()
			res.highWaterMark = r.int64()
			res.lastStable = r.int64()
			if v >= 5 {
				r.skip(8) // log start offset
			}
			for n := r.int32(); n > 0 && r.err == nil; n-- {
				res.aborted = append(res.aborted, abortedTxn{producer: r.int64(), first: r.int64()})
			}
			if v >= 11 {
				r.skip(4) // preferred read replica
			}
			res.records = r.bytes()
			if r.err == nil && topic == c.topic && p == c.partition {
				return res, nil
			}
		}
	}
	if r.err != nil {
		return fetchResult{}, fmt.Errorf("kafka: fetch response: %w", r.err)
	}
	return fetchResult{}, fmt.Errorf("kafka: fetch response without %s", Stream(c.topic, int(c.partition)))
}

// wireReader reads a response's big-endian fields; past the end, it keeps its first error and
// returns zeros.
type wireReader struct {
	b   []byte
	err error
}

func (r *wireReader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		if r.err == nil {
			r.err = fmt.Errorf("cut short: %d bytes wanted, %d left", n, len(r.b))
		}
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *wireReader) skip(n int) { r.take(n) }

func (r *wireReader) int16() int16 {
	if p := r.take(2); p != nil {
		return int16(binary.BigEndian.Uint16(p))
	}
	return 0
}

func (r *wireReader) int32() int32 {
	if p := r.take(4); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

func (r *wireReader) int64() int64 {
	if p := r.take(8); p != nil {
		return int64(binary.BigEndian.Uint64(p))
	}
	return 0
}

func (r *wireReader) string() string {
	n := r.int16()
	if n < 0 {
		return ""
	}
	return string(r.take(int(n)))
}

// bytes reads a nullable byte array: nil for null.
func (r *wireReader) bytes() []byte {
	n := r.int32()
	if n < 0 {
		return nil
	}
	return r.take(int(n))
}

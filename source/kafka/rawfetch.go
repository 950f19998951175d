package kafka

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxFetchVersion is the newest Fetch request version FetchPartition sends: the last one that
// names topics rather than topic ids and has no tagged fields (Kafka 2.3 and later, Kafka 4
// included); minFetchVersion the oldest, the first whose responses hold record batches (0.11).
const (
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
	conn, err := d.DialLeader(ctx, "tcp", broker, topic, partition)
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

// connDialer returns a copy of d that does TLS itself and hands got each connection it makes:
// kafka-go wraps a DialFunc's connection in TLS after the fact, so the connection its Conn
// speaks on is visible only when the DialFunc makes it. The TLS is kafka-go's: same config, the
// server name inferred from the address as kafka-go does, the handshake bound to ctx.
func connDialer(d *kafkago.Dialer, got func(net.Conn)) *kafkago.Dialer {
	c := *d
	cfg, dial := d.TLS, d.DialFunc
	if dial == nil {
		dial = (&net.Dialer{LocalAddr: d.LocalAddr, DualStack: d.DualStack, FallbackDelay: d.FallbackDelay, KeepAlive: d.KeepAlive}).DialContext
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
		if v.ApiKey == int16(kmsg.Fetch) {
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
	errorCode     int16
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

// writeFetch writes a Fetch request (header v1: api key, version, correlation id, client id).
func (c *leaderConn) writeFetch(offset int64, maxBytes int, maxWait time.Duration) error {
	req := kmsg.NewPtrFetchRequest()
	req.Version = c.version
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(maxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = int32(maxBytes)
	req.SessionEpoch = -1 // no fetch session
	t := kmsg.NewFetchRequestTopic()
	t.Topic = c.topic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes = c.partition, offset, int32(maxBytes)
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)

	b := append(c.req[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.Version))
	b = binary.BigEndian.AppendUint32(b, uint32(c.corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.clientID)))
	b = append(b, c.clientID...)
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.req = b
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.nc.Write(b)
	c.nc.SetWriteDeadline(time.Time{})
	return err
}

// partitionResult decodes a fetch response's body and finds the partition in it.
func (c *leaderConn) partitionResult(body []byte) (fetchResult, error) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = c.version
	if err := resp.ReadFrom(body); err != nil {
		return fetchResult{}, fmt.Errorf("kafka: fetch response: %w", err)
	}
	if resp.ErrorCode != 0 {
		return fetchResult{}, kafkago.Error(resp.ErrorCode)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if t.Topic == c.topic && p.Partition == c.partition {
				return fetchResult{records: p.RecordBatches, highWaterMark: p.HighWatermark, errorCode: p.ErrorCode}, nil
			}
		}
	}
	return fetchResult{}, fmt.Errorf("kafka: fetch response without %s", Stream(c.topic, int(c.partition)))
}

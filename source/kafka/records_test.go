package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka/cdcdemo"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// The record batches these tests read are the broker's (real Kafka 4 with KAFKA_BROKERS, kfake
// otherwise), written by kafka-go's writer or franz-go's transactional producer: never bytes
// put together by hand.

// produceBatches writes n messages to a new one-partition topic with codec, in batches of
// batchLen: keys, values, null keys, a tombstone (null value) and headers.
func produceBatches(t *testing.T, c *kafkatest.Cluster, codec kafkago.Compression, n, batchLen int) string {
	t.Helper()
	return produceBatchesTo(t, c, c.CreateTopic(t, "records-"+fmt.Sprint(codec), 1), codec, n, batchLen)
}

func produceBatchesTo(t *testing.T, c *kafkatest.Cluster, topic string, codec kafkago.Compression, n, batchLen int) string {
	t.Helper()
	w := c.Writer(topic)
	w.Compression, w.BatchSize = codec, batchLen
	defer w.Close()
	t0 := time.UnixMilli(1_700_000_000_000)
	var msgs []kafkago.Message
	for i := range n {
		m := kafkago.Message{Key: []byte(fmt.Sprintf("k%d", i)), Value: bytes.Repeat([]byte(fmt.Sprintf(`{"i":%d}`, i)), 1+i%7),
			Time: t0.Add(time.Duration(i) * time.Millisecond), Headers: []kafkago.Header{{Key: "h", Value: []byte("v")}}}
		switch i % 5 {
		case 1:
			m.Key = nil
		case 3:
			m.Value = nil // a tombstone
		}
		msgs = append(msgs, m)
	}
	for len(msgs) > 0 { // one WriteMessages a batch: the broker keeps kafka-go's batches as they are
		k := min(batchLen, len(msgs))
		if err := w.WriteMessages(context.Background(), msgs[:k]...); err != nil {
			t.Fatalf("produce: %v", err)
		}
		msgs = msgs[k:]
	}
	return topic
}

// kafkaGoMessages reads the partition from offset with kafka-go's own reader: what FetchPartition
// read before it parsed record batches itself.
func kafkaGoMessages(t *testing.T, c *kafkatest.Cluster, topic string, offset int64, n int) []kafkago.Message {
	t.Helper()
	conn, err := kafkago.DialLeader(context.Background(), "tcp", c.Brokers[0], topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Seek(offset, kafkago.SeekAbsolute); err != nil {
		t.Fatal(err)
	}
	var out []kafkago.Message
	for len(out) < n {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		b := conn.ReadBatch(1, 16<<20)
		for {
			m, err := b.ReadMessage()
			if err != nil {
				break
			}
			out = append(out, m)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("kafka-go read: %v", err)
		}
	}
	return out
}

// fetched reads n messages of the partition from offset with StartFetch, a batch a fetch (the
// broker returns at least one whole batch), and returns them once all are read: a response
// buffer fetched into again while its messages were in use would show.
func fetched(t *testing.T, c *kafkatest.Cluster, topic string, offset int64, n int) []kafkago.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := &Config{Brokers: c.Brokers, Topic: topic}
	f := cfg.StartFetch(ctx, &kafkago.Dialer{}, 0, offset, FetchOptions{MaxWait: 50 * time.Millisecond, BatchLen: 7, MaxBytes: 1})
	defer f.Stop()
	var out []kafkago.Message
	for len(out) < n {
		select {
		case b, ok := <-f.C:
			if !ok {
				t.Fatalf("the fetch ended after %d messages: %v", len(out), f.Err())
			}
			out = append(out, b.Messages...)
		case <-ctx.Done():
			t.Fatalf("%d messages of %d", len(out), n)
		}
	}
	return out
}

func sameMessages(t *testing.T, got, want []kafkago.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d messages, kafka-go read %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Offset != w.Offset || !bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) || !g.Time.Equal(w.Time) ||
			g.Topic != w.Topic || g.Partition != w.Partition || g.HighWaterMark != w.HighWaterMark {
			t.Fatalf("message %d: got offset %d key %q value %q time %v topic %s/%d hwm %d;\nkafka-go read offset %d key %q value %q time %v topic %s/%d hwm %d",
				i, g.Offset, g.Key, g.Value, g.Time, g.Topic, g.Partition, g.HighWaterMark,
				w.Offset, w.Key, w.Value, w.Time, w.Topic, w.Partition, w.HighWaterMark)
		}
	}
}

// Each codec's batches read as kafka-go's reader reads them, from the partition's start and from
// an offset inside a batch (the broker returns the whole batch: the messages before the offset
// are not the fetch's).
func TestFetchReadsBatchesAsKafkaGoDoesForEachCodec(t *testing.T) {
	c := kafkatest.Start(t)
	for _, codec := range []kafkago.Compression{0, kafkago.Gzip, kafkago.Snappy, kafkago.Lz4, kafkago.Zstd} {
		t.Run(fmt.Sprint(codec), func(t *testing.T) {
			const n, batchLen = 60, 20
			topic := produceBatches(t, c, codec, n, batchLen)
			sameMessages(t, fetched(t, c, topic, 0, n), kafkaGoMessages(t, c, topic, 0, n))

			const mid = batchLen + 7
			if base := firstBatchOffset(t, c, topic, mid); base >= mid {
				t.Fatalf("the fetch at %d starts with a batch at %d: not inside one", mid, base)
			}
			sameMessages(t, fetched(t, c, topic, mid, n-mid), kafkaGoMessages(t, c, topic, mid, n-mid))
		})
	}
}

// A topic's compression.type other than the producer's makes the broker compress the batches
// again with its own (Java) encoders: lz4 frames of 64 KiB blocks among them. On kfake, which
// keeps the producer's batches, the topic reads uncompressed.
func TestFetchReadsBatchesTheBrokerCompressed(t *testing.T) {
	c := kafkatest.Start(t)
	for id, codec := range []string{1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"} {
		if codec == "" {
			continue
		}
		t.Run(codec, func(t *testing.T) {
			const n = 400 // more than 64 KiB a batch
			topic := c.CreateTopicWith(t, "broker-"+codec, 1, map[string]string{"compression.type": codec})
			produceBatchesTo(t, c, topic, 0, n, n)
			if res := rawFetch(t, c, topic, 0); kafkatest.Real() && int(res.records[batchAttributes+1]&attrCompression) != id {
				t.Fatalf("the broker's batch has attributes %#x: not compressed with %s", res.records[batchAttributes+1], codec)
			}
			sameMessages(t, fetched(t, c, topic, 0, n), kafkaGoMessages(t, c, topic, 0, n))
		})
	}
}

// firstBatchOffset is the base offset of the first record batch a fetch at offset returns.
func firstBatchOffset(t *testing.T, c *kafkatest.Cluster, topic string, offset int64) int64 {
	t.Helper()
	res := rawFetch(t, c, topic, offset)
	if len(res.records) < 8 {
		t.Fatalf("a fetch at %d returned %d bytes", offset, len(res.records))
	}
	return int64(binary.BigEndian.Uint64(res.records))
}

func rawFetch(t *testing.T, c *kafkatest.Cluster, topic string, offset int64) fetchResult {
	t.Helper()
	conn, err := dialLeader(context.Background(), &kafkago.Dialer{}, c.Brokers[0], topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.negotiate(); err != nil || conn.version != maxFetchVersion {
		t.Fatalf("Fetch version %d, %v; want %d", conn.version, err, maxFetchVersion)
	}
	res, err := conn.fetch(offset, 16<<20, 100*time.Millisecond, 10*time.Second)
	if err != nil || res.errorCode != 0 {
		t.Fatalf("fetch at %d: %v, error code %d", offset, err, res.errorCode)
	}
	return res
}

// A record set the broker cut short at the fetch's MaxBytes ends after its last whole batch: the
// next fetch starts at the cut batch.
func TestRecordSetStopsAtABatchCutShort(t *testing.T) {
	c := kafkatest.Start(t)
	topic := produceBatches(t, c, 0, 30, 10)
	res := rawFetch(t, c, topic, 0)
	first := 12 + int(binary.BigEndian.Uint32(res.records[8:]))
	s := newRecordSet(res.records[:first+20], 0, nil)
	var m kafkago.Message
	n := 0
	for {
		ok, err := s.read(&m)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		n++
	}
	if n != 10 || s.next != 10 {
		t.Fatalf("%d messages, next offset %d; want the first batch's 10, then 10", n, s.next)
	}
}

// A transactional topic is read at isolation level read-committed, as Kafka's consumer reads it
// with isolation.level=read_committed: an aborted transaction's messages are left out, a
// committed one's and those of producers outside transactions are kept, in offset order, and the
// transactions' commit and abort markers (control records: no message of the topic's data) are
// skipped; the fetch moves past the last marker: a partition that ends with one is read to its
// end.
func TestFetchReadsCommittedTransactionsOnly(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "txn", 1)
	ctx := context.Background()
	txn, plain := c.Producers(t, topic)
	produce := func(cl *kgo.Client, v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for i, commit := range []bool{true, false, true} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			v := fmt.Sprintf("txn%d-%d", i, j)
			produce(txn, v)
			if commit {
				want = append(want, v)
			}
			if j == 1 { // another producer's message inside the transaction's span: kept
				v := fmt.Sprintf("plain%d", i)
				produce(plain, v)
				want = append(want, v)
			}
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	// four messages and a marker a transaction
	const end = 15
	got := fetched(t, c, topic, 0, len(want))
	for i, m := range got {
		if string(m.Value) != want[i] {
			t.Fatalf("message %d (offset %d): %q, want %q", i, m.Offset, m.Value, want[i])
		}
	}
	res := rawFetch(t, c, topic, 0)
	s := newRecordSet(res.records, 0, res.aborted)
	var all []string
	var m kafkago.Message
	for {
		ok, err := s.read(&m)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		all = append(all, string(m.Value))
	}
	if !slices.Equal(all, want) {
		t.Fatalf("one fetch read %q, want %q", all, want)
	}
	if s.next != end || res.highWaterMark != end || res.lastStable != end {
		t.Fatalf("the next fetch starts at %d, high watermark %d, last stable offset %d; want all %d", s.next, res.highWaterMark, res.lastStable, end)
	}
}

// An open transaction holds back its messages and every message after its start, whoever wrote
// them, until it ends: read-committed reads up to the last stable offset.
func TestFetchWaitsForAnOpenTransaction(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "open-txn", 1)
	ctx := context.Background()
	txn, plain := c.Producers(t, topic)
	for _, p := range []struct {
		cl *kgo.Client
		v  string
	}{{plain, "before"}, {txn, "in-txn"}, {plain, "after"}} {
		if p.cl == txn {
			if err := txn.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.cl.ProduceSync(ctx, &kgo.Record{Value: []byte(p.v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	res := rawFetch(t, c, topic, 0)
	var m kafkago.Message
	s := newRecordSet(res.records, 0, res.aborted)
	if ok, err := s.read(&m); !ok || err != nil || string(m.Value) != "before" {
		t.Fatalf("first message %q (%v, %v), want \"before\"", m.Value, ok, err)
	}
	if ok, err := s.read(&m); ok || err != nil {
		t.Fatalf("read %q (%v) past the open transaction's start", m.Value, err)
	}
	if res.lastStable != 1 || res.highWaterMark != 3 {
		t.Fatalf("last stable offset %d, high watermark %d; want 1 and 3", res.lastStable, res.highWaterMark)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	got := fetched(t, c, topic, 1, 2)
	if string(got[0].Value) != "in-txn" || string(got[1].Value) != "after" {
		t.Fatalf("after the commit: %q, %q; want \"in-txn\", \"after\"", got[0].Value, got[1].Value)
	}
}

// A batch whose bytes changed after the producer wrote it fails its CRC-32C, as in Kafka's
// consumer (an lz4 frame's own checksum is not read).
func TestRecordSetRefusesACorruptBatch(t *testing.T) {
	c := kafkatest.Start(t)
	topic := produceBatches(t, c, kafkago.Lz4, 10, 10)
	res := rawFetch(t, c, topic, 0)
	b := bytes.Clone(res.records)
	b[len(b)-3] ^= 0x40
	var m kafkago.Message
	if ok, err := newRecordSet(b, 0, nil).read(&m); ok || err == nil || !strings.Contains(err.Error(), "CRC") {
		t.Fatalf("read %v, %v; want a CRC error", ok, err)
	}
	if ok, err := newRecordSet(res.records, 0, nil).read(&m); !ok || err != nil {
		t.Fatalf("the batch as fetched: %v, %v", ok, err)
	}
}

// A broker without the Fetch versions FetchPartition sends (a leader connection whose version
// was not negotiated stands for one) is read through kafka-go's reader, from inside a batch too.
func TestFetchReadsThroughKafkaGoWithoutAFetchVersion(t *testing.T) {
	c := kafkatest.Start(t)
	topic := produceBatches(t, c, kafkago.Lz4, 30, 10)
	conn, err := dialLeader(context.Background(), &kafkago.Dialer{}, c.Brokers[0], topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	out := make(chan FetchBatch, 100)
	f := newPartitionFetch(context.Background(), &Config{Topic: topic}, 0, 5, FetchOptions{}, out)
	if sent, err := f.readBatch(conn); !sent || err != nil {
		t.Fatalf("sent %v, %v", sent, err)
	}
	close(out)
	var got []kafkago.Message
	for b := range out {
		got = append(got, b.Messages...)
	}
	sameMessages(t, got, kafkaGoMessages(t, c, topic, 5, 25))
	if f.offset != 30 {
		t.Fatalf("the next fetch at %d, want 30", f.offset)
	}
}

// Every Fetch version FetchPartition may send (an older broker's newest) reads the same records.
func TestFetchVersionsReadTheSameRecords(t *testing.T) {
	c := kafkatest.Start(t)
	topic := produceBatches(t, c, kafkago.Zstd, 30, 10)
	want := rawFetch(t, c, topic, 0)
	conn, err := dialLeader(context.Background(), &kafkago.Dialer{}, c.Brokers[0], topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for v := int16(minFetchVersion); v <= maxFetchVersion; v++ {
		conn.version = v
		res, err := conn.fetch(0, 16<<20, 100*time.Millisecond, 10*time.Second)
		if err != nil || res.errorCode != 0 || res.highWaterMark != want.highWaterMark || !bytes.Equal(res.records, want.records) {
			t.Fatalf("Fetch v%d: %v, error code %d, high watermark %d, %d bytes; v%d: %d, %d bytes",
				v, err, res.errorCode, res.highWaterMark, len(res.records), maxFetchVersion, want.highWaterMark, len(want.records))
		}
	}
}

// tamperedFetch makes kfake answer the partition's fetches with records(offset) instead of what
// it holds (nil: what it holds), and calls asked with every fetch's offset.
func tamperedFetch(c *kafkatest.Cluster, topic string, hwm int64, records func(offset int64) []byte, asked func(offset int64)) {
	c.Fake.ControlKey(kmsg.Fetch.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		req := r.(*kmsg.FetchRequest)
		if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 {
			return nil, nil, false
		}
		offset := req.Topics[0].Partitions[0].FetchOffset
		if asked != nil {
			asked(offset)
		}
		b := records(offset)
		if b == nil {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = hwm, hwm, 0
		rp.RecordBatches = b
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
}

// fetchFromStart starts a fetch of topic's partition 0 from offset 0, stopped when the test ends,
// and returns it with its context (30 s).
func fetchFromStart(t *testing.T, c *kafkatest.Cluster, topic string) (context.Context, *Fetcher) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cfg := &Config{Brokers: c.Brokers, Topic: topic}
	f := cfg.StartFetch(ctx, &kafkago.Dialer{}, 0, 0, FetchOptions{MaxWait: 50 * time.Millisecond})
	t.Cleanup(f.Stop)
	return ctx, f
}

// askedThrice returns tamperedFetch's asked for offset and a channel it closes when the fetch
// asks for offset a third time.
func askedThrice(offset int64) (func(int64), <-chan struct{}) {
	third := make(chan struct{})
	var mu sync.Mutex
	n := 0
	return func(o int64) {
		mu.Lock()
		defer mu.Unlock()
		if o == offset {
			if n++; n == 3 {
				close(third)
			}
		}
	}, third
}

// breakSecondBatch returns the record set with its second batch's gzip stream made unreadable
// and its CRC made to match again (a batch a producer compressed wrongly): the batch passes its
// CRC check and fails to decompress.
func breakSecondBatch(t *testing.T, records []byte) []byte {
	t.Helper()
	b := bytes.Clone(records)
	second := b[12+int(binary.BigEndian.Uint32(b[8:])):]
	second = second[:12+int(binary.BigEndian.Uint32(second[8:]))]
	if second[batchHeaderLen] != 0x1f || second[batchHeaderLen+1] != 0x8b {
		t.Fatalf("the second batch's records start % x, not a gzip stream", second[batchHeaderLen:batchHeaderLen+2])
	}
	second[batchHeaderLen] = 0
	binary.BigEndian.PutUint32(second[batchCRC:], crc32.Checksum(second[batchAttributes:], castagnoli))
	return b
}

// A fetch whose response holds a batch that cannot be read is fetched again from that batch:
// the messages after it are not read before it, nor is a position past it reported. The fetch
// went on after the broken batch, and the batches it had sent said to commit past it: its
// messages were lost.
func TestFetchReadsABatchThatFailedAgain(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	c := kafkatest.Start(t)
	topic := produceBatches(t, c, kafkago.Gzip, 30, 10)
	broken := breakSecondBatch(t, rawFetch(t, c, topic, 0).records)
	var mu sync.Mutex
	served := false
	tamperedFetch(c, topic, 30, func(offset int64) []byte {
		mu.Lock()
		defer mu.Unlock()
		if offset != 0 || served {
			return nil
		}
		served = true
		return broken
	}, nil)
	ctx, f := fetchFromStart(t, c, topic)
	var got []int64
	for len(got) < 30 {
		select {
		case b, ok := <-f.C:
			if !ok {
				t.Fatalf("the fetch ended after offsets %v: %v", got, f.Err())
			}
			for _, m := range b.Messages {
				got = append(got, m.Offset)
			}
			if len(b.Messages) > 0 && len(got) < 30 && b.Next > got[len(got)-1]+1 {
				t.Fatalf("a batch ending at offset %d has its next fetch at %d: a commit of it skips the offsets between", got[len(got)-1], b.Next)
			}
		case <-ctx.Done():
			t.Fatalf("offsets %v read", got)
		}
	}
	for i, o := range got {
		if o != int64(i) {
			t.Fatalf("offsets read: %v; want 0 to 29 in order, once each", got)
		}
	}
}

// A batch that fails to read again when fetched again is so in the partition's log, not garbled
// on its way: the fetch ends with its error, naming its offset, where it fetched it again and
// again, reporting nothing (the window of migrate and report then ended at its idle timeout as
// though the partition had been read, replicate stalled).
func TestFetchEndsAtABatchThatFailsTwice(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	c := kafkatest.Start(t)
	topic := produceBatches(t, c, kafkago.Gzip, 30, 10)
	broken := breakSecondBatch(t, rawFetch(t, c, topic, 0).records)
	first := 12 + int(binary.BigEndian.Uint32(broken[8:]))
	asked, again := askedThrice(10)
	tamperedFetch(c, topic, 30, func(offset int64) []byte {
		switch offset {
		case 0:
			return broken
		case 10:
			return broken[first:]
		}
		return nil
	}, asked)
	ctx, f := fetchFromStart(t, c, topic)
	var got []int64
	for {
		select {
		case b, ok := <-f.C:
			if ok {
				for _, m := range b.Messages {
					got = append(got, m.Offset)
				}
				continue
			}
		case <-again:
			t.Fatalf("the broken batch at offset 10 was fetched a third time, the fetch goes on (offsets %v read)", got)
		case <-ctx.Done():
			t.Fatalf("offsets %v read", got)
		}
		break
	}
	err := f.Err()
	if err == nil || !strings.Contains(err.Error(), "offset 10") || !strings.Contains(err.Error(), "gzip") {
		t.Fatalf("the fetch ended with %v; want the broken batch's error", err)
	}
	if len(got) != 10 || got[9] != 9 {
		t.Fatalf("offsets %v read; want 0 to 9", got)
	}
}

// The broker returns a partition's first record batch whole, however small the fetch: a response
// holding only part of a batch (its length field broken) is no batch to wait for. The fetch sent
// the same request again and again at once, reading nothing, reporting nothing; it now fetches
// once more, then ends with an error naming the offset.
func TestFetchEndsAtAResponseWithoutAWholeBatch(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	// the first batch's header and part of its records; part of its length
	for _, cut := range []int{100, 10} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) { fetchWithoutAWholeBatch(t, cut) })
	}
}

func fetchWithoutAWholeBatch(t *testing.T, cut int) {
	c := kafkatest.Start(t)
	topic := produceBatches(t, c, 0, 30, 10)
	records := rawFetch(t, c, topic, 0).records
	asked, third := askedThrice(0)
	tamperedFetch(c, topic, 30, func(offset int64) []byte {
		if offset == 0 {
			return records[:cut]
		}
		return nil
	}, asked)
	ctx, f := fetchFromStart(t, c, topic)
	for {
		select {
		case b, ok := <-f.C:
			if !ok {
				if err := f.Err(); err == nil || !strings.Contains(err.Error(), "offset 0") {
					t.Fatalf("the fetch ended with %v; want an error naming offset 0", err)
				}
				return
			}
			if len(b.Messages) > 0 {
				t.Fatalf("read offset %d from a response without a whole batch", b.Messages[0].Offset)
			}
		case <-third:
			t.Fatal("a response holding part of a batch only was fetched a third time: the fetch goes on")
		case <-ctx.Done():
			t.Fatal("the fetch neither ended nor fetched again")
		}
	}
}

// SeedRepeats reads every message before its end offset, past a fetch that found none: one that
// read only an aborted transaction's batches (or markers) is no end of the partition. It took
// such a fetch for the end, and the events after the transaction were not seeded: one the
// connector published again was applied again.
func TestSeedRepeatsReadsPastAnAbortedTransaction(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "seed-aborted", 1)
	ctx := context.Background()
	txn, plain := c.Producers(t, topic)
	// more than a fetch holds (1 MiB at first), in batches of the producer's (1 MB at most)
	kafkatest.AbortIncompressible(ctx, t, txn, 3000)
	ev := cdcdemo.Event("i", time.UnixMilli(1_700_000_000_000), `{"a":1,"b":1,"c":1}`, 0,
		`"a":`+cdcdemo.Cell("1"), `"b":`+cdcdemo.Cell("1"), `"c":`+cdcdemo.Cell("1"), `"x":`+cdcdemo.Cell(`"v"`))
	if err := plain.ProduceSync(ctx, &kgo.Record{Key: ev.Key, Value: ev.Value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	end := int64(3002) // the aborted messages, their marker, the event
	schema := pipeline.SourceSchema{{Name: "a", Type: "int"}, {Name: "b", Type: "int"}, {Name: "c", Type: "int"}, {Name: "x", Type: "text"}, {Name: "y", Type: "int"}}
	cfg := Config{Brokers: c.Brokers, Topic: topic, Format: FormatDebezium}
	d, err := NewDecoder(cfg, schema)
	if err != nil {
		t.Fatal(err)
	}
	d.SkipRepeats = true
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cfg.SeedRepeats(sctx, &kafkago.Dialer{}, 0, 0, end, d); err != nil {
		t.Fatal(err)
	}
	// the connector publishes the event again: the partition's new owner skips it
	if chs := d.Decode(nil, ev.Key, ev.Value); len(chs) != 1 || !chs[0].Repeat {
		t.Fatalf("the event at offset %d, published again, decodes to %s: SeedRepeats did not read it", end-1, show(chs))
	}
}

// A batch of a topic with message.timestamp.type=LogAppendTime carries the time the broker
// appended it in its max timestamp, and every record's timestamp is that time, as Kafka's
// consumers read it (the records' own deltas are the producer's create times): messages were
// given their producer's times, and report's write order (Kafka timestamps) followed the
// producers' clocks instead of the log's.
func TestRecordSetReadsLogAppendTime(t *testing.T) {
	c := kafkatest.Start(t)
	topic := produceBatches(t, c, kafkago.Snappy, 10, 10)
	b := bytes.Clone(rawFetch(t, c, topic, 0).records)
	const appended = 1_800_000_000_000
	binary.BigEndian.PutUint16(b[batchAttributes:], binary.BigEndian.Uint16(b[batchAttributes:])|0x08)
	binary.BigEndian.PutUint64(b[batchBaseTime+8:], appended) // the max timestamp
	binary.BigEndian.PutUint32(b[batchCRC:], crc32.Checksum(b[batchAttributes:12+int(binary.BigEndian.Uint32(b[8:]))], castagnoli))
	s := newRecordSet(b, 0, nil)
	var m kafkago.Message
	n := 0
	for {
		ok, err := s.read(&m)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if m.Time.UnixMilli() != appended {
			t.Fatalf("message at offset %d: time %d, want the batch's log append time %d", m.Offset, m.Time.UnixMilli(), int64(appended))
		}
		n++
	}
	if n != 10 {
		t.Fatalf("%d messages, want 10", n)
	}
}

// A record whose varints are malformed (more than 10 bytes: an overflow) fails its batch with an
// error, as a record cut short does: the reader stepped back by the varint's negative length and
// panicked on a negative slice index, ending the process.
func TestRecordSetRefusesAnOverlongVarint(t *testing.T) {
	c := kafkatest.Start(t)
	topic := produceBatches(t, c, 0, 10, 10)
	b := bytes.Clone(rawFetch(t, c, topic, 0).records)
	end := 12 + int(binary.BigEndian.Uint32(b[8:]))
	_, n := varint(b[batchHeaderLen:]) // the first record's length
	tsDelta := batchHeaderLen + n + 1  // after the record's attributes
	for i := range 11 {
		b[tsDelta+i] = 0xff
	}
	binary.BigEndian.PutUint32(b[batchCRC:], crc32.Checksum(b[batchAttributes:end], castagnoli))
	var m kafkago.Message
	if ok, err := newRecordSet(b[:end], 0, nil).read(&m); ok || err == nil {
		t.Fatalf("read %v, %v; want an error", ok, err)
	}
}

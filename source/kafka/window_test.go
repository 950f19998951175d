package kafka_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

var schema = pipeline.SourceSchema{{Name: "userid", Type: "text"}, {Name: "orderid", Type: "bigint"}}

// produceOrders writes n messages per partition: {"userid":"u<p>-<i>","orderid":i}, with a
// tombstone at i%50==49 and a poison message at i%97==96.
func produceOrders(t *testing.T, c *kafkatest.Cluster, topic string, parts, n int) {
	var msgs []kafkago.Message
	for p := 0; p < parts; p++ {
		for i := 0; i < n; i++ {
			m := kafkago.Message{Partition: p, Key: []byte(fmt.Sprintf(`{"userid":"u%d-%d"}`, p, i))}
			switch {
			case i%50 == 49:
			case i%97 == 96:
				m.Value = []byte(`{"userid":`)
			default:
				m.Value = []byte(fmt.Sprintf(`{"userid":"u%d-%d","orderid":%d}`, p, i, i))
			}
			msgs = append(msgs, m)
		}
	}
	c.Produce(t, topic, msgs...)
}

func collect(t *testing.T, src pipeline.Source, resume map[string]pipeline.StreamState) []pipeline.Batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := make(chan pipeline.Batch, 16)
	errc := make(chan error, 1)
	go func() { errc <- src.Run(ctx, resume, out); close(out) }()
	var bs []pipeline.Batch
	for b := range out {
		bs = append(bs, b)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return bs
}

func TestWindow(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "window", 3)
	produceOrders(t, c, topic, 3, 500)
	ctx := context.Background()
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/"+topic+"?format=json", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kafka.NewWindow(ctx, cfg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.EstimatedRows() != 1500 {
		t.Fatalf("EstimatedRows = %d", w.EstimatedRows())
	}
	bs := collect(t, w, nil)
	next := map[string]int64{}
	done := map[string]bool{}
	codes := map[string]int{}
	for _, b := range bs {
		if !b.SaltOrigin {
			t.Fatal("SaltOrigin not set")
		}
		for _, r := range b.Records {
			if r.Seq != next[b.Stream] {
				t.Fatalf("%s: record at offset %d, expected %d", b.Stream, r.Seq, next[b.Stream])
			}
			next[b.Stream]++
			if r.Err != nil {
				codes[r.Err.Code]++
				if r.Raw == "" {
					t.Errorf("reject without raw: %v", r.Err)
				}
				continue
			}
			p, _ := strconv.Atoi(b.Stream[len(b.Stream)-1:])
			if want := fmt.Sprintf("u%d-%d", p, r.Seq); r.Values[0].Str != want || r.Values[1].Num != r.Seq {
				t.Fatalf("%s:%d = %v", b.Stream, r.Seq, r.Values)
			}
		}
		if b.Cursor != strconv.FormatInt(next[b.Stream], 10) {
			t.Fatalf("cursor %s after offset %d", b.Cursor, next[b.Stream])
		}
		done[b.Stream] = done[b.Stream] || b.Done
	}
	if len(done) != 3 || !done[kafka.Stream(topic, 0)] || !done[kafka.Stream(topic, 2)] {
		t.Fatalf("done: %v", done)
	}
	for s, n := range next {
		if n != 500 {
			t.Errorf("%s: %d records", s, n)
		}
	}
	// per partition: 10 tombstones (i%50==49), 5 poison (96, 193, 290, 387, 484: none is also a tombstone)
	if codes[kafka.CodeDelete] != 30 || codes[pipeline.CodeParse] != 15 {
		t.Errorf("codes: %v", codes)
	}

	// resume from a cursor: partition 1 continues at 400, partition 0 is done
	bs = collect(t, w, map[string]pipeline.StreamState{
		kafka.Stream(topic, 0): {Done: true},
		kafka.Stream(topic, 1): {Cursor: "400"},
	})
	count := map[string]int{}
	for _, b := range bs {
		count[b.Stream] += len(b.Records)
		if b.Stream == kafka.Stream(topic, 1) && len(b.Records) > 0 && b.Records[0].Seq < 400 {
			t.Fatalf("resumed before the cursor: %d", b.Records[0].Seq)
		}
	}
	if count[kafka.Stream(topic, 0)] != 0 || count[kafka.Stream(topic, 1)] != 100 || count[kafka.Stream(topic, 2)] != 500 {
		t.Fatalf("resumed counts: %v", count)
	}

	// a latest window of 300 messages: the last 100 of each partition
	cfg.Start, cfg.Max = kafka.StartLatest, 300
	w, err = kafka.NewWindow(ctx, cfg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	bs = collect(t, w, nil)
	first := map[string]int64{}
	count = map[string]int{}
	for _, b := range bs {
		for _, r := range b.Records {
			if _, ok := first[b.Stream]; !ok {
				first[b.Stream] = r.Seq
			}
			count[b.Stream]++
		}
	}
	for _, s := range []string{kafka.Stream(topic, 0), kafka.Stream(topic, 1), kafka.Stream(topic, 2)} {
		if first[s] != 400 || count[s] != 100 {
			t.Errorf("latest window %s: first %d, %d records", s, first[s], count[s])
		}
	}

	// a spread sample
	cfg.Start, cfg.Max = kafka.StartEarliest, 0
	w, _ = kafka.NewWindow(ctx, cfg, schema, nil)
	sample, err := w.Sample(ctx, 300)
	if err != nil {
		t.Fatal(err)
	}
	if len(sample) < 250 || len(sample) > 300 {
		t.Fatalf("sample of %d records", len(sample))
	}
	var offs []int
	for _, r := range sample {
		offs = append(offs, int(r.Seq))
	}
	sort.Ints(offs)
	if offs[len(offs)-1] < 400 {
		t.Errorf("sample not spread: highest offset %d", offs[len(offs)-1])
	}
}

func TestWindowSASL(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("SASL users are set up in kfake only")
	}
	for _, mech := range []string{"plain", "scram-sha-256", "scram-sha-512"} {
		t.Run(mech, func(t *testing.T) {
			kmech := map[string]string{"plain": "PLAIN", "scram-sha-256": "SCRAM-SHA-256", "scram-sha-512": "SCRAM-SHA-512"}[mech]
			// a non-ASCII password: kafka-go's SCRAM (xdg-go/scram) applies SASLprep
			c := kafkatest.Start(t, kfake.EnableSASL(), kfake.Superuser(kmech, "admin", "s3cret-pässwörd"),
				kfake.SeedTopics(1, "sasl"))
			t.Setenv(kafka.PasswordEnv, "s3cret-pässwörd")
			cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/sasl?sasl="+mech+"&user=admin", os.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			_, tr, err := cfg.Client()
			if err != nil {
				t.Fatal(err)
			}
			defer tr.CloseIdleConnections()
			w := &kafkago.Writer{Addr: kafkago.TCP(c.Brokers...), Topic: "sasl", Transport: tr, BatchTimeout: time.Millisecond,
				RequiredAcks: kafkago.RequireAll} // kafka-go's default is fire-and-forget: the window could start before the broker had the message
			if err := w.WriteMessages(context.Background(), kafkago.Message{Value: []byte(`{"userid":"a","orderid":1}`)}); err != nil {
				t.Fatalf("produce with %s: %v", mech, err)
			}
			w.Close()
			win, err := kafka.NewWindow(context.Background(), cfg, schema, nil)
			if err != nil {
				t.Fatal(err)
			}
			bs := collect(t, win, nil)
			n := 0
			for _, b := range bs {
				n += len(b.Records)
			}
			if n != 1 {
				t.Fatalf("%d records", n)
			}
			// a wrong password is refused, and named as such (the metadata client says "unexpected EOF")
			cfg.SASL.Password = "wrong"
			_, err = kafka.NewWindow(context.Background(), cfg, schema, nil)
			if !errors.Is(err, kafka.ErrAuthentication) || !strings.Contains(err.Error(), "authentication failed for user admin at broker "+c.Brokers[0]) ||
				!strings.Contains(err.Error(), kafka.PasswordEnv) {
				t.Fatalf("wrong password: %v", err)
			}
		})
	}
}

func TestParseURI(t *testing.T) {
	c, err := kafka.ParseURI("kafka://b1:9092,b2/orders?group=g1&format=debezium&start=latest&max=100&tls=true&keycol=userid", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Brokers) != 2 || c.Brokers[1] != "b2:9092" || c.Topic != "orders" || c.Group != "g1" ||
		c.Format != "debezium" || c.Start != "latest" || c.Max != 100 || !c.TLS.Enabled || c.KeyColumn != "userid" {
		t.Fatalf("%+v", c)
	}
	for _, bad := range []string{
		"kafka://b1:9092",
		"kafka:///t",
		"kafka://b1:9092/t?format=avro",
		"kafka://b1:9092/t?bogus=1",
		"kafka://b1:9092/t?sasl=plain&user=u",
		"kafka://b1:9092/t?sasl=gssapi&user=u",
		"kafka://b1:9092/t?max=-1",
		"kafka://b1:9092/t?cert=a.pem",
	} {
		t.Setenv(kafka.PasswordEnv, "")
		if _, err := kafka.ParseURI(bad, os.Getenv); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	t.Setenv(kafka.PasswordEnv, "pw")
	c, err = kafka.ParseURI("kafka://alice@b1:9092/t", os.Getenv)
	if err != nil || c.SASL.Mechanism != "plain" || c.SASL.User != "alice" || c.SASL.Password != "pw" {
		t.Fatalf("userinfo: %+v %v", c.SASL, err)
	}
}

// TestWindowTLS reads through TLS, verifying the broker's certificate against a CA file.
func TestWindowTLS(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("TLS is set up in kfake only")
	}
	caPEM, serverCert := selfSignedCA(t)
	c := kafkatest.Start(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert}}), kfake.SeedTopics(1, "tls"))
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/tls?tls=true&ca="+ca, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	_, tr, err := cfg.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	w := &kafkago.Writer{Addr: kafkago.TCP(c.Brokers...), Topic: "tls", Transport: tr, BatchTimeout: time.Millisecond,
		RequiredAcks: kafkago.RequireAll} // acknowledged: see TestWindowSASL
	if err := w.WriteMessages(context.Background(), kafkago.Message{Value: []byte(`{"userid":"a","orderid":1}`)}); err != nil {
		t.Fatalf("produce over TLS: %v", err)
	}
	w.Close()
	win, err := kafka.NewWindow(context.Background(), cfg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range collect(t, win, nil) {
		n += len(b.Records)
	}
	if n != 1 {
		t.Fatalf("%d records over TLS", n)
	}
	// without the CA the broker's certificate is refused
	cfg.TLS.CAFile = ""
	if _, err := kafka.NewWindow(context.Background(), cfg, schema, nil); err == nil {
		t.Fatal("an unknown certificate was accepted")
	}
}

// selfSignedCA returns a CA certificate (PEM) and a server certificate for 127.0.0.1 it signed.
func selfSignedCA(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rekey test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// migrate and report read rows: a Cassandra connector event that sets some columns is not one
// (partial_update), nor is a range tombstone (range_tombstone); an INSERT of every column is.
func TestWindowCassandraPartialEvents(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "cassandra", 1)
	cellOf := func(v string) string { return `{"value":` + v + `,"deletion_ts":null,"set":true}` }
	src := `"source":{"connector":"cassandra"}`
	c.Produce(t, topic,
		kafkago.Message{Value: []byte(`{"op":"i",` + src + `,"after":{"userid":` + cellOf(`"u1"`) + `,"orderid":` + cellOf(`1`) + `}}`)},
		kafkago.Message{Value: []byte(`{"op":"u",` + src + `,"after":{"userid":` + cellOf(`"u1"`) + `}}`)},
		kafkago.Message{Value: []byte(`{"op":"r",` + src + `,"after":{"userid":` + cellOf(`"u1"`) + `,"_range_start":{"method":"INCL_START_BOUND","values":[]},"_range_end":{"method":"INCL_END_BOUND","values":[]}}}`)})
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/"+topic+"?format=debezium", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kafka.NewWindow(context.Background(), cfg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range collect(t, w, nil) {
		for _, r := range b.Records {
			if r.Err != nil {
				got = append(got, r.Err.Code)
			} else {
				got = append(got, r.Values[0].Str)
			}
		}
	}
	if want := "[u1 partial_update range_tombstone]"; fmt.Sprint(got) != want {
		t.Errorf("records %v, want %s", got, want)
	}
}

// A consumer that takes its time over the window's batches (a slow target) does not make a
// partition look idle: Idle counts the time the window waits for the fetch, not the time its
// batches wait to be taken. A window whose consumer held a batch longer than Idle ended at its
// next wait for the fetch, the rest of the partition unread, as though an open transaction held
// it back.
func TestWindowIdleIsNotASlowConsumer(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	const topic, n = "slow-consumer", 3000
	c := kafkatest.Start(t, kfake.SeedTopics(1, topic))
	pad := strings.Repeat("x", 400) // 1,000 messages a batch (the writer's): 2 batches a fetch
	msgs := make([]kafkago.Message, n)
	for i := range msgs {
		msgs[i] = kafkago.Message{Value: []byte(fmt.Sprintf(`{"userid":"%s","orderid":%d}`, pad, i))}
	}
	c.Produce(t, topic, msgs...)
	// the second fetch is answered once the consumer has taken the first batch: the window
	// then waits for it
	release := make(chan struct{})
	var fetches atomic.Int32
	c.Fake.ControlKey(kmsg.Fetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		if fetches.Add(1) == 2 {
			c.Fake.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := openWindow(ctx, t, c, topic)
	w.Idle = 500 * time.Millisecond
	out := make(chan pipeline.Batch)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx, nil, out); close(out) }()
	time.Sleep(2 * w.Idle) // the consumer is slow: the window's first batch waits to be taken
	got := 0
	for b := range out {
		if got == 0 {
			close(release)
		}
		got += len(b.Records)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("the window read %d of %d messages: it ended while its consumer was slow to take a batch", got, n)
	}
}

// A fetch that gets further without a message (past an aborted transaction's batches, all a
// fetch may hold) is no idle partition: Idle ends a window's partition when no fetch gets further.
// A window whose fetches spent longer than Idle in all skipping an aborted transaction ended
// there, without the messages after it.
func TestWindowIdleIsNotAnAbortedTransaction(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	const topic = "aborted-window"
	c := kafkatest.Start(t, kfake.SeedTopics(1, topic))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	txn, plain := c.Producers(t, topic)
	// 4 MB the producer cannot compress: 4 fetches of 1 MiB
	kafkatest.AbortIncompressible(ctx, t, txn, 4000)
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte(`{"userid":"u1","orderid":1}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	w := openWindow(ctx, t, c, topic)
	// a slow link: every fetch takes 3/5 of Idle, all of them more than Idle
	w.Idle = time.Second
	c.Fake.ControlKey(kmsg.Fetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		c.Fake.SleepControl(func() { time.Sleep(600 * time.Millisecond) })
		return nil, nil, false
	})
	bs := collect(t, w, nil)
	n := 0
	for _, b := range bs {
		n += len(b.Records)
	}
	if n != 1 {
		t.Fatalf("the window read %d messages, want the one after the aborted transaction", n)
	}
}

// A partition whose fetches are not answered for a while (a leader moving, a broker restarting)
// is not idle: the fetch retries, and the window reads on once a fetch is answered. Idle ends a
// partition whose fetches are answered without getting further (an open transaction). The window
// ended after Idle without an answer as though the partition had been read, and migrate and
// report went on without its messages.
func TestWindowWaitsForUnansweredFetches(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	const topic, n = "leader-moving", 100
	c := kafkatest.Start(t, kfake.SeedTopics(1, topic))
	produceOrders(t, c, topic, 1, n)
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/"+topic, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := kafka.NewWindow(ctx, cfg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Idle = 300 * time.Millisecond
	// the first 20 fetches fail: with the fetch's backoff (50ms at least), longer than Idle
	var fetches atomic.Int32
	c.Fake.ControlKey(kmsg.Fetch.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		if fetches.Add(1) > 20 {
			return nil, nil, false
		}
		req := r.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	got := 0
	for _, b := range collect(t, w, nil) {
		got += len(b.Records)
	}
	if got != n {
		t.Fatalf("the window read %d of %d messages after %d fetches: it ended while the fetches were not answered", got, n, fetches.Load())
	}
}

// An open transaction holds back the rest of its partition: the fetches are answered without
// getting further, and the window's partition ends after Idle with what came before it.
func TestWindowEndsAtAnOpenTransaction(t *testing.T) {
	const topic = "open-txn-window"
	c := kafkatest.Start(t)
	name := c.CreateTopic(t, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	txn, plain := c.Producers(t, name)
	row := func(i int) []byte { return []byte(fmt.Sprintf(`{"userid":"u%d","orderid":%d}`, i, i)) }
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: row(0)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: row(1)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	defer txn.EndTransaction(context.Background(), kgo.TryAbort)
	w := openWindow(ctx, t, c, name)
	w.Idle = 200 * time.Millisecond
	got := 0
	for _, b := range collect(t, w, nil) {
		got += len(b.Records)
	}
	if got != 1 {
		t.Fatalf("the window read %d messages, want the one before the open transaction", got)
	}
}

// openWindow opens a window over the whole of topic on c, of the test schema.
func openWindow(ctx context.Context, t *testing.T, c *kafkatest.Cluster, topic string) *kafka.Window {
	t.Helper()
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/"+topic, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kafka.NewWindow(ctx, cfg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Messages of a window deleted (retention, DeleteRecords) after the window was opened and before
// they were read fail the read, naming them and what to do: the window's bounds are fixed when it
// opens (and in a checkpoint), and a migrate that skipped them finished without them, with a log
// line. Before, the read went on from the first retained message.
func TestWindowFailsOnMessagesDeletedBeforeTheyWereRead(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "shrinking", 1)
	msgs := make([]kafkago.Message, 100)
	for i := range msgs {
		msgs[i] = kafkago.Message{Value: []byte(fmt.Sprintf(`{"userid":"u%d","orderid":%d}`, i, i))}
	}
	c.Produce(t, topic, msgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := openWindow(ctx, t, c, topic) // offsets 0 to 99
	c.DeleteRecords(t, topic, 0, 40)
	out := make(chan pipeline.Batch)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx, nil, out); close(out) }()
	got := 0
	for b := range out {
		got += len(b.Records)
	}
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), "messages 0 to 39 of the window were deleted") || !strings.Contains(err.Error(), "retention") {
		t.Fatalf("a window whose messages 0-39 were deleted before they were read: %d read, error %v; want a failure naming them", got, err)
	}
}

// TestParseURIRefusesAPasswordWithoutALogin: REKEY_KAFKA_PASSWORD set for a URI that asks for no
// SASL login (no user, no sasl=) is refused, naming the variable and what to add, as a Cassandra
// password without a user name is: before, the password was dropped without a word and the
// client connected without logging in (a broker that wants SASL then closed the connection).
func TestParseURIRefusesAPasswordWithoutALogin(t *testing.T) {
	env := func(name string) string {
		if name == kafka.PasswordEnv {
			return "s3cret-pw"
		}
		return ""
	}
	_, err := kafka.ParseURI("kafka://b1:9092/t?group=g", env)
	if err == nil || !strings.Contains(err.Error(), kafka.PasswordEnv) || !strings.Contains(err.Error(), "user=") {
		t.Fatalf("a password without a SASL login: %v, want it refused naming %s and user=", err, kafka.PasswordEnv)
	}
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("the error quotes the password: %v", err)
	}
	if _, err := kafka.ParseURI("kafka://b1:9092/t?group=g", func(string) string { return "" }); err != nil {
		t.Fatalf("no password, no login: %v", err)
	}
	if c, err := kafka.ParseURI("kafka://b1:9092/t?sasl=scram-sha-512&user=u", env); err != nil || c.SASL.Password != "s3cret-pw" {
		t.Fatalf("a password with a login: %+v %v", c.SASL, err)
	}
}

// A sample takes each partition's share of it, in proportion to what the partition holds: a share
// that its runs of consecutive messages do not divide evenly (17 messages in 16 runs) is not
// rounded up per run, which took nearly twice the share from the first partitions and cut the
// last ones out of the sample.
func TestWindowSampleCoversEveryPartition(t *testing.T) {
	const topic, parts, per = "sample-parts", 10, 100
	c := kafkatest.Start(t)
	name := c.CreateTopic(t, topic, parts)
	var msgs []kafkago.Message
	for p := range parts {
		for i := range per {
			msgs = append(msgs, kafkago.Message{Partition: p, Value: []byte(fmt.Sprintf(`{"userid":"u%d-%d","orderid":%d}`, p, i, i))})
		}
	}
	c.Produce(t, name, msgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := openWindow(ctx, t, c, name)
	const n = 170
	bs, err := w.SampleBatches(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	total := 0
	for _, b := range bs {
		count[b.Stream] += len(b.Records)
		total += len(b.Records)
	}
	if total != n {
		t.Errorf("sample of %d records, want %d", total, n)
	}
	for p := range parts {
		if got := count[kafka.Stream(name, p)]; got != n/parts {
			t.Errorf("partition %d: %d records of the sample, want its share %d (all: %v)", p, got, n/parts, count)
		}
	}
}

// A window read whole (migrate, verify) waits on an open transaction that holds back the rest of a
// partition, however long it stays open, and reads the rest once it ends: the messages past the
// transaction's start, its own and other producers' committed ones, are the window's. Before, the
// partition's read ended after Idle without them and the partition counted as read: a migration
// finished without them (only a Warn said so), and --resume never read them.
func TestWindowWaitsForAnOpenTransaction(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "window-held", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	txn, plain := c.Producers(t, topic)
	produce := func(cl *kgo.Client, from, to int) {
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf(`{"userid":"u%d","orderid":%d}`, i, i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(plain, 0, 100)
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(txn, 100, 101)
	produce(plain, 101, 150)
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/"+topic+"?format=json", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	w, err := kafka.NewWindow(ctx, cfg, schema, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	w.Idle = 20 * time.Millisecond
	out := make(chan pipeline.Batch, 16)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx, nil, out); close(out) }()
	// once the window has waited Idle on the transaction, it ends
	wait.For(t, func() bool { return logs.FilterMessageSnippet("open transaction").Len() > 0 }, "the window waiting on the open transaction")
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	var read int
	done := false
	for b := range out {
		read += len(b.Records)
		done = done || b.Done
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if read != 150 || !done {
		t.Fatalf("read %d messages (partition done: %v), want the window's 150", read, done)
	}
	if held := w.HeldBack(); len(held) != 0 {
		t.Fatalf("held back %+v", held)
	}
}

package replicate_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// TestRetentionGap: a replicator restarted after the topic deleted (DeleteRecords, as retention
// does) messages it had not read yet stops with an error naming the partition and both offsets,
// and commits nothing past the gap; with AcceptGaps it continues at the earliest offset, counts
// the skipped messages and records the gap in manifest.json.
func TestRetentionGap(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-gap", 1)
	group := "g-gap"
	msgs, _, _ := jsonStream(1, 281)
	c.Produce(t, topic, msgs[:100]...)
	dir := t.TempDir()
	cfg := config(t, c, topic, group, "json", dir)
	rn := start(t, cfg)
	waitCommitted(t, c, group, topic, map[int]int64{0: 100}, 60*time.Second)
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}

	// 81 messages (tombstones among them) are deleted before the replicator reads them
	c.Produce(t, topic, msgs[100:]...)
	c.DeleteRecords(t, topic, 0, 181)

	rn = start(t, cfg)
	var gap *kafka.GapError
	select {
	case err := <-rn.done:
		if !errors.As(err, &gap) {
			t.Fatalf("run ended with %v, want a gap error", err)
		}
		if gap.Partition != 0 || gap.Next != 100 || gap.First != 181 {
			t.Fatalf("gap %+v, want partition 0, next offset 100, first offset 181", gap)
		}
		for _, want := range []string{"partition 0", "committed next offset 100", "earliest available offset 181", "--accept-gaps"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	case <-committedTo(c, group, topic, 281):
		t.Fatal("the replicator skipped the deleted messages silently: offset 281 committed")
	}
	if got := c.Committed(t, group, topic, 1)[0]; got != 100 {
		t.Errorf("committed offset %d after the gap error, want 100", got)
	}

	cfg.AcceptGaps = true
	rn = start(t, cfg)
	waitCommitted(t, c, group, topic, map[int]int64{0: 281}, 60*time.Second)
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}
	m := rn.r.Metrics()
	if m.Gaps.Load() != 1 || m.GapMessages.Load() != 81 {
		t.Errorf("gaps %d, gap messages %d; want 1, 81", m.Gaps.Load(), m.GapMessages.Load())
	}
	rec := httptest.NewRecorder()
	rn.r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if !strings.Contains(string(body), "rekey_gap_messages_total 81") {
		t.Error("/metrics lacks rekey_gap_messages_total 81")
	}
	man := readManifest(t, dir)
	if len(man.Replication.Partitions) != 1 {
		t.Fatalf("manifest partitions %+v", man.Replication.Partitions)
	}
	gaps := man.Replication.Partitions[0].Gaps
	if len(gaps) != 1 || gaps[0].NextOffset != 100 || gaps[0].FirstOffset != 181 || gaps[0].Messages != 81 {
		t.Errorf("manifest gaps %+v, want one from 100 to 181 (81 messages)", gaps)
	}
	// the table is the messages before the gap and after it
	want := modelOf(t, append(append([]kafkago.Message{}, msgs[:100]...), msgs[181:]...))
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
}

// committedTo is closed once the group committed offset of partition 0 of topic.
func committedTo(c *kafkatest.Cluster, group, topic string, offset int64) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		if wait.Until(func() bool { return committed(c, group, topic) >= offset }, wait.Timeout) {
			close(ch)
		}
	}()
	return ch
}

func committed(c *kafkatest.Cluster, group, topic string) int64 {
	cl := &kafkago.Client{Addr: kafkago.TCP(c.Brokers...), Timeout: 10 * time.Second}
	resp, err := cl.OffsetFetch(context.Background(), &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0}}})
	if err != nil {
		return -1
	}
	for _, p := range resp.Topics[topic] {
		return p.CommittedOffset
	}
	return -1
}

// modelOf applies json-format messages in order: the expected table.
func modelOf(t testing.TB, msgs []kafkago.Message) model {
	t.Helper()
	want := model{}
	for _, m := range msgs {
		var k struct {
			UserID  string `json:"userid"`
			OrderID int64  `json:"orderid"`
		}
		if err := json.Unmarshal(m.Key, &k); err != nil {
			t.Fatal(err)
		}
		if m.Value == nil {
			want.delete(k.UserID, k.OrderID)
			continue
		}
		var v struct {
			UserID  string `json:"userid"`
			OrderID int64  `json:"orderid"`
			Amount  int64  `json:"amount"`
			Note    string `json:"note"`
		}
		if json.Unmarshal(m.Value, &v) != nil {
			continue // poison: rejected
		}
		want.upsert(row{userid: v.UserID, amount: v.Amount, note: v.Note}, v.OrderID)
	}
	return want
}

package kafka_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A fetch response that arrives later than MaxWait (a loaded machine, a slow link) used to time
// out on a read deadline of MaxWait alone; the fetcher reconnected for ever, delivering nothing
// and reporting nothing (seen as TestRollSize hanging under -race on a busy 2-core machine).
func TestSlowFetchResponsesStillDeliver(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	c := kafkatest.Start(t, kfake.SeedTopics(1, "slow"))
	produceOrders(t, c, "slow", 1, 20)
	c.Fake.ControlKey(kmsg.Fetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		c.Fake.SleepControl(func() { time.Sleep(600 * time.Millisecond) }) // > MaxWait (250ms)
		return nil, nil, false
	})
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/slow", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	dialer, err := cfg.Dialer()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := make(chan kafka.FetchBatch, 16)
	go cfg.FetchPartition(ctx, dialer, 0, 0, kafka.FetchOptions{}, out)
	got := 0
	for got < 20 {
		select {
		case b := <-out:
			got += len(b.Messages)
		case <-ctx.Done():
			t.Fatalf("%d of 20 messages fetched before the deadline: slow responses are never read", got)
		}
	}
}

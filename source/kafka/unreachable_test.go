package kafka_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// refusingListener closes every connection it accepts once refuse is set: a broker the
// metadata names that this client cannot talk to (a wrong advertised listener, a firewall).
type refusingListener struct {
	net.Listener
	refuse *atomic.Bool
}

func (l refusingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || !l.refuse.Load() {
			return c, err
		}
		c.Close()
	}
}

// The offsets of a partition whose leader this client cannot reach fail with the network's
// error, naming the partition: kafka-go's Client.ListOffsets turns a request that failed on its
// way into the broker error UNKNOWN_SERVER_ERROR (-1) when other partitions' requests succeed,
// and the look-up said "[-1] Unknown: an unexpected server error occurred", sending the user to
// the broker's logs, where there is nothing, rather than to the connection.
func TestOffsetsOfAnUnreachableLeaderNameTheConnection(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's listeners")
	}
	var refuse atomic.Bool
	n := 0
	c := kafkatest.Start(t, kfake.NumBrokers(2), kfake.SeedTopics(2, "split"), kfake.ListenFn(func(network, address string) (net.Listener, error) {
		ln, err := net.Listen(network, address)
		if n++; n == 2 && err == nil { // broker 1's
			ln = refusingListener{ln, &refuse}
		}
		return ln, err
	}))
	if err := c.Fake.MoveTopicPartition("split", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Fake.MoveTopicPartition("split", 1, 1); err != nil {
		t.Fatal(err)
	}
	refuse.Store(true)
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/split", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cfg.Offsets(context.Background())
	if err == nil {
		t.Fatal("the offsets of a partition whose leader cannot be reached were read")
	}
	if errors.Is(err, kafkago.Unknown) || !strings.Contains(err.Error(), "split/1") {
		t.Fatalf("offsets with partition 1's leader out of reach: %v; want the connection's error, naming split/1", err)
	}
	t.Log(err)
}

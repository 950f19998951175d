package kafka_test

import (
	"context"
	"os"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
	"github.com/rekey/rekey/source/sourcetest"
)

// A bounded window over a topic's partitions (one stream each, poison messages and tombstones
// among them) resumes after any batch from the next offsets without losing or repeating a message;
// its Identity is stable and changes when the topic grows.
func TestSourceConformance(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "conformance", 3)
	produceOrders(t, c, topic, 3, 120)
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/"+topic+"?format=json", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T) pipeline.Source {
		w, err := kafka.NewWindow(context.Background(), cfg, schema, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.BatchSize = 25
		return w
	}
	sourcetest.Run(t, sourcetest.Case{
		Open: open,
		OpenChanged: func(t *testing.T) pipeline.Source {
			produceOrders(t, c, topic, 3, 1)
			return open(t)
		},
	})
}

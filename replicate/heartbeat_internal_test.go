package replicate

import (
	"context"
	"errors"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A heartbeat the broker refuses (the member is unknown: it was dropped after its session timed
// out, and its partitions went to another member) ends the lease at once, so that a member paused
// past its session and continued runs none of its batch's statements. kafka-go's
// Client.Heartbeat reads the answer's error code into its throttle time (segmentio/kafka-go#1371):
// every refusal looked accepted and renewed the lease, and a member continued after a pause could
// win the race between its first beat and its statements' lease check (a stopped member's older
// batch then overwrote its successor's newer rows).
func TestRefusedHeartbeatEndsTheLease(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "beats", 1)
	group := c.Group("beats")
	cg, err := kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{ID: group, Brokers: c.Brokers, Topics: []string{topic},
		SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second, RebalanceTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	// a fresh broker answers COORDINATOR_NOT_AVAILABLE until its offsets topic exists
	var gen *kafkago.Generation
	wait.For(t, func() bool {
		gen, err = cg.Next(context.Background())
		if err != nil && !errors.Is(err, kafkago.GroupCoordinatorNotAvailable) {
			t.Fatal(err)
		}
		return err == nil
	}, "the consumer group's first generation")
	g := GroupOptions{SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second, HeartbeatInterval: 10 * time.Millisecond}
	r := &Replicator{cfg: Config{Kafka: kafka.Config{Brokers: c.Brokers, Topic: topic, Group: group}, Group: g}, log: zap.NewNop()}
	for _, tc := range []struct {
		name string
		gen  *kafkago.Generation
	}{
		{"a member the broker does not know", &kafkago.Generation{ID: gen.ID, GroupID: group, MemberID: "dropped-member"}},
		{"a generation past", &kafkago.Generation{ID: gen.ID - 1, GroupID: group, MemberID: gen.MemberID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLease(g)
			closed := make(chan struct{})
			done := make(chan struct{})
			go func() { r.heartbeat(context.Background(), tc.gen, l, closed); close(done) }()
			defer func() { close(closed); <-done }()
			if !wait.Until(l.lost.Load, 10*time.Second) {
				t.Fatalf("the broker refused the beats for 10 s and the lease is still held (%v left)", l.left())
			}
		})
	}
	// the member's own beats are accepted and renew the lease
	l := newLease(g)
	closed := make(chan struct{})
	done := make(chan struct{})
	go func() { r.heartbeat(context.Background(), gen, l, closed); close(done) }()
	wait.For(t, func() bool { return l.sent.Load() > 0 }, "an accepted beat of the member")
	close(closed)
	<-done
	if l.lost.Load() {
		t.Error("the member's own beats ended its lease")
	}
}

// kafka-go's Client.Heartbeat reads a refusal's error code into Throttle (heartbeatError). When
// this fails, kafka-go reads the answer right: heartbeatError must then take Error alone, or a
// throttle time would be read as an error.
func TestKafkaGoHeartbeatDecoding(t *testing.T) {
	c := kafkatest.Start(t)
	r := &Replicator{cfg: Config{Kafka: kafka.Config{Brokers: c.Brokers}}}
	cl, tr, err := r.cfg.Kafka.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	resp, err := cl.Heartbeat(context.Background(), &kafkago.HeartbeatRequest{Addr: kafkago.TCP(c.Brokers[0]), GroupID: c.Group("none"), GenerationID: 1, MemberID: "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error != nil || resp.Throttle%time.Millisecond != 0 || heartbeatError(resp) == nil {
		t.Fatalf("kafka-go's heartbeat answer (error %v, throttle %v) is no longer the misread one heartbeatError corrects", resp.Error, resp.Throttle)
	}
	t.Logf("refused: %v", heartbeatError(resp))
}

// While the group's coordinator cannot be found, the warning that heartbeats are not getting
// through names the broker's answer (here COORDINATOR_NOT_AVAILABLE). FindCoordinator's error
// went into a variable of its own block: the warning carried the error of an earlier beat, or
// none ("error": null), and the user could not tell why the member's lease ran out.
func TestHeartbeatWarningNamesTheCoordinatorLookupsError(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	c := kafkatest.Start(t)
	c.Fake.ControlKey(kmsg.FindCoordinator.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		resp := req.(*kmsg.FindCoordinatorRequest).ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode, resp.NodeID = 15, -1 // COORDINATOR_NOT_AVAILABLE
		return resp, nil, true
	})
	core, logs := observer.New(zap.WarnLevel)
	g := GroupOptions{SessionTimeout: time.Second, RebalanceTimeout: time.Second, HeartbeatInterval: 10 * time.Millisecond}
	r := &Replicator{cfg: Config{Kafka: kafka.Config{Brokers: c.Brokers, Group: c.Group("lost")}, Group: g}, log: zap.New(core)}
	l := newLease(g)
	closed := make(chan struct{})
	done := make(chan struct{})
	go func() {
		r.heartbeat(context.Background(), &kafkago.Generation{ID: 1, GroupID: c.Group("lost"), MemberID: "m"}, l, closed)
		close(done)
	}()
	defer func() { close(closed); <-done }()
	wait.For(t, func() bool { return logs.Len() > 0 }, "the warning that heartbeats are not getting through")
	e := logs.All()[0]
	for _, f := range e.Context {
		if err, ok := f.Interface.(error); ok && errors.Is(err, kafkago.GroupCoordinatorNotAvailable) {
			t.Log(e.Message, err)
			return
		}
	}
	t.Fatalf("%q: %v; want the broker's COORDINATOR_NOT_AVAILABLE", e.Message, e.ContextMap())
}

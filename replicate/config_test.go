package replicate_test

import (
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/kafka"
)

// Validate reports every missing or wrong field at once, in the fields' order, and fills the
// zero fields that have a default, the consumer group's included.
func TestValidateReportsAllAndFillsDefaults(t *testing.T) {
	var empty replicate.Config
	err := empty.Validate()
	if err == nil {
		t.Fatal("an empty configuration was accepted")
	}
	msg, at := err.Error(), -1
	for _, want := range []string{"kafka: no broker", "a consumer group is required", "no mapping", "no file format", "no output directory"} {
		i := strings.Index(msg, want)
		if i < at {
			t.Errorf("%q missing or out of order in:\n%s", want, msg)
		}
		at = i
	}

	dir := t.TempDir()
	p := program(t)
	cfg := replicate.Config{Kafka: kafka.Config{Brokers: []string{"localhost:9092"}, Topic: "orders", Group: "g"},
		Program: p, Plan: plan(t, p), Format: parquet.New(), Store: sinktest.Folder(t, dir)}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	g := cfg.Group
	if cfg.Out != cfg.Store.Location("") || cfg.RollSize != replicate.DefaultRollSize || cfg.RollInterval != replicate.DefaultRollInterval ||
		cfg.Memory != replicate.DefaultMemory || cfg.RegionSize != p.RegionSize() || cfg.Logger == nil {
		t.Errorf("defaults not filled: out %q roll %d/%s memory %d region size %d", cfg.Out, cfg.RollSize, cfg.RollInterval, cfg.Memory, cfg.RegionSize)
	}
	if g.SessionTimeout != 30*time.Second || g.HeartbeatInterval != 3*time.Second || g.RebalanceTimeout != time.Minute ||
		g.JoinBackoff != time.Second || g.LeaveTimeout != 5*time.Second || g.StartOffset != kafkago.FirstOffset {
		t.Errorf("group defaults not filled: %+v", g)
	}

	bad := cfg
	bad.RollSize, bad.Group.StartOffset = -1, 7
	bad.Plan = pipeline.RegionPlan{Type: pipeline.TypeDouble, Splits: []pipeline.Value{pipeline.Float(1)}}
	err = bad.Validate()
	for _, want := range []string{"must not be negative", "region plan typed", "StartOffset must be"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
}

package replicate_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/rekey/rekey/internal/testnet"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/kafka"
)

// A stop (Ctrl-C, SIGTERM) while the brokers' check at the start waits for a broker that accepted
// the connection and has not answered ends Run at once, cleanly (nothing was read): the check
// heard only a hard stop, so a SIGTERM waited out the dial timeout and ended as a failed run.
func TestStopDuringTheBrokersCheckEndsRun(t *testing.T) {
	asked := make(chan struct{}, 16)
	addr := testnet.Silent(t, asked)
	kc, err := kafka.ParseURI("kafka://"+addr+"/orders?group=g&format=json", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	kc.DialTimeout = 10 * time.Minute
	dir := t.TempDir()
	p := program(t)
	r, err := replicate.New(context.Background(), replicate.Config{
		Kafka: kc, Program: p, Plan: plan(t, p), Format: parquet.New(), Store: sinktest.Folder(t, dir), Out: dir,
		RollSize: 64 << 20, RollInterval: time.Second, Memory: 16 << 20,
		Group:  replicate.GroupOptions{SessionTimeout: 3 * time.Second, HeartbeatInterval: 100 * time.Millisecond, RebalanceTimeout: 10 * time.Second},
		Logger: zaptest.NewLogger(t).Named(filepath.Base(dir)),
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background(), stop) }()
	<-asked
	close(stop)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run stopped during the brokers' check: %v, want a clean stop", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run still waits for a silent broker a minute after it was stopped")
	}
}

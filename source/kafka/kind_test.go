package kafka_test

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"

	"go.uber.org/zap"

	"github.com/rekey/rekey/source"
	"github.com/rekey/rekey/source/kafka"
)

// Opening a window looks up the topic's offsets under the command's context: cancelled (Ctrl-C)
// while a broker holds the request unanswered, the open ends with the context's error. Before,
// it waited for its own minute, whatever the command's context said.
func TestKindOpenEndsWithItsContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// a broker that takes the connection and never answers; the open is cancelled then
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			cancel()
		}
	}()
	_, err = kafka.Kind.Open(ctx, "kafka://"+ln.Addr().String()+"/orders", source.Input{Schema: schema, Getenv: os.Getenv, Logger: zap.NewNop()})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("open of a window cancelled while the broker holds its request: %v, want %v", err, context.Canceled)
	}
}

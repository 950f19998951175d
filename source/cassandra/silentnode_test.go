package cassandra_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
)

// A node that accepts the connection and never answers CQL (a hung node, a node still starting,
// another service on the port) is a cluster that could not be reached, as one that refuses the
// connection is: the same command may succeed once it answers, so the run fails (exit 3, a Job
// retries it) rather than being taken for invalid use (exit 2). The error names the contact
// point and says that it does not answer CQL.
func TestSilentNodeIsUnreachable(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		port := serve(t, func(c net.Conn) { io.Copy(io.Discard, c) })
		cfg := cassandra.Config{Hosts: []string{"127.0.0.1"}, Port: port, Keyspace: "k", Table: "t",
			ConnectTimeout: 200 * time.Millisecond, Timeout: 200 * time.Millisecond}
		if tlsOn {
			cfg.TLS = cassandra.TLSConfig{Enabled: true, SkipVerify: true}
		}
		src, err := cassandra.New(context.Background(), cfg, nil)
		if err == nil {
			src.Close()
			t.Fatal("a node that never answers was taken for a cluster")
		}
		if !pipeline.Unreachable(err) {
			t.Errorf("tls=%v: a node that accepts connections and never answers is not a cluster that could not be reached: %v", tlsOn, err)
		}
		t.Logf("tls=%v: %v", tlsOn, err)
		if want := fmt.Sprintf("127.0.0.1:%d accepts", port); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "does not answer") {
			t.Errorf("tls=%v: the error does not name the contact point and say it does not answer: %v", tlsOn, err)
		}
	}
}

// A contact point given with its port (cassandra://host:port/...) is named once, with it.
func TestSilentNodeWithItsPortIsNamedOnce(t *testing.T) {
	port := serve(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	host := fmt.Sprintf("127.0.0.1:%d", port)
	cfg := cassandra.Config{Hosts: []string{host}, Port: 9042, Keyspace: "k", Table: "t",
		ConnectTimeout: 200 * time.Millisecond, Timeout: 200 * time.Millisecond}
	src, err := cassandra.New(context.Background(), cfg, nil)
	if err == nil {
		src.Close()
		t.Fatal("a node that never answers was taken for a cluster")
	}
	if !strings.Contains(err.Error(), host+" accepts") || strings.Contains(err.Error(), "9042") {
		t.Fatalf("the contact point %s: %v; want it named as given, without the default port", host, err)
	}
}

package cassandra_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/testnet"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// serve accepts connections on a loopback port until the test ends and hands each to handle.
func serve(t *testing.T, handle func(net.Conn)) (port int) {
	return testnet.Serve(t, handle).Port
}

// A node that accepts the connection and never answers the TLS handshake (a port of another
// service, a node that hangs) fails the connection within the connect timeout, as it does
// without TLS, rather than holding the command forever.
func TestTLSHandshakeWithASilentNodeFails(t *testing.T) {
	port := serve(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	cfg := cassandra.Config{Hosts: []string{"127.0.0.1"}, Port: port, Keyspace: "k", Table: "t",
		ConnectTimeout: 200 * time.Millisecond, Timeout: 200 * time.Millisecond, TLS: cassandra.TLSConfig{Enabled: true, SkipVerify: true}}
	done := make(chan error, 1)
	go func() {
		src, err := cassandra.New(context.Background(), cfg, nil)
		if err == nil {
			src.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a node that never answers the TLS handshake was taken for a cluster")
		}
		t.Logf("error: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("cassandra.New still waits for the TLS handshake of a silent node, a minute after its 200ms connect timeout")
	}
}

// Through TLS (a TLS proxy in front of the CQL test server), the source connects and reads the
// table's schema.
func TestTLSConnects(t *testing.T) {
	srv, err := cqltest.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.CreateTable("ks", "t", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "v", Type: "text"}}, []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	cert := selfSignedCert(t)
	port := serve(t, func(c net.Conn) {
		tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}})
		defer tc.Close()
		up, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			return
		}
		go func() { io.Copy(up, tc); up.Close() }()
		io.Copy(tc, up)
	})
	cfg := cassandra.Config{Hosts: []string{"127.0.0.1"}, Port: port, Keyspace: "ks", Table: "t",
		TLS: cassandra.TLSConfig{Enabled: true, SkipVerify: true}}
	src, err := cassandra.New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("through TLS: %v", err)
	}
	src.Close()
}

func selfSignedCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rekey test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(crand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// Opening the source ends when its context does (Ctrl-C while a command plans its ranges): a
// node that accepts the connection and never answers held the command for the whole connect
// timeout, whatever the user pressed.
func TestOpenEndsWithItsContext(t *testing.T) {
	accepted := make(chan struct{}, 16)
	port := serve(t, func(c net.Conn) { accepted <- struct{}{}; io.Copy(io.Discard, c) })
	cfg := cassandra.Config{Hosts: []string{"127.0.0.1"}, Port: port, Keyspace: "k", Table: "t",
		ConnectTimeout: 10 * time.Minute, Timeout: 10 * time.Minute}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		src, err := cassandra.New(ctx, cfg, nil)
		if err == nil {
			src.Close()
		}
		done <- err
	}()
	<-accepted
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the open ended with %v, want the context's cancellation", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("cassandra.New still waits for a silent node a minute after its context ended")
	}
}

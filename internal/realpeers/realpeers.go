// Package realpeers lets the real-peer tier (deploy/dev/peers.sh ci-test) require the real
// Cassandra, Kafka and Debezium connector: with RequireEnv=1, a test that would fall back to an
// in-process stand-in, or skip, because a peer's variable is unset fails instead. Only tests
// import it.
package realpeers

import (
	"os"
	"testing"
)

// RequireEnv, set to 1, makes a missing real peer fail the test.
const RequireEnv = "REKEY_REQUIRE_REAL_PEERS"

// Missing reports whether the peer named by the environment variable env is unset; when it is
// and RequireEnv=1, it fails t, saying how to start the peers.
func Missing(t testing.TB, env string) bool {
	t.Helper()
	if os.Getenv(env) != "" {
		return false
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s=1 but %s is not set: start the real peers (bash deploy/dev/peers.sh start) and export what it prints", RequireEnv, env)
	}
	return true
}

package kafka_test

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/source/kafka"
)

// The SASL user is given once: in the URI's user info (kafka://alice@host) or as user=. Both,
// with different names, are refused naming both (user= won without a word, so the password was
// tried for another user than the URI named); the same name, or either alone, is taken.
func TestURIUserAndUserParameterMustAgree(t *testing.T) {
	getenv := func(k string) string {
		if k == kafka.PasswordEnv {
			return "pw"
		}
		return ""
	}
	for _, c := range []struct {
		uri, want string
		refused   bool
	}{
		{"kafka://alice@127.0.0.1:9092/t?sasl=plain&user=bob", "", true},
		{"kafka://alice@127.0.0.1:9092/t?sasl=plain&user=alice", "alice", false},
		{"kafka://alice@127.0.0.1:9092/t?sasl=plain", "alice", false},
		{"kafka://127.0.0.1:9092/t?sasl=plain&user=bob", "bob", false},
	} {
		cfg, err := kafka.ParseURI(c.uri, getenv)
		switch {
		case c.refused && (err == nil || !strings.Contains(err.Error(), "alice@") || !strings.Contains(err.Error(), "user=bob")):
			t.Errorf("%s: %v, want refused naming both users", c.uri, err)
		case !c.refused && err != nil:
			t.Errorf("%s: %v", c.uri, err)
		case !c.refused && cfg.SASL.User != c.want:
			t.Errorf("%s: user %q, want %q", c.uri, cfg.SASL.User, c.want)
		}
	}
}

package cassandra

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/source"
)

// --cassandra-user and the URI's user (cassandra://app@host) name one login: given both with
// different names, the source is refused naming both (the flag used to win without a word, so
// the password was tried for another user than the URI said); the same name, or either alone,
// is taken, and REKEY_CASSANDRA_USER only when neither names one.
func TestUserFlagAndURIUserMustAgree(t *testing.T) {
	getenv := func(k string) string {
		if k == UserEnv {
			return "envuser"
		}
		return ""
	}
	for _, c := range []struct {
		uri, flag, want string
		refused         bool
	}{
		{"cassandra://app@127.0.0.1:9042/ks/t", "migrator", "", true},
		{"cassandra://app@127.0.0.1:9042/ks/t", "app", "app", false},
		{"cassandra://app@127.0.0.1:9042/ks/t", "", "app", false},
		{"cassandra://127.0.0.1:9042/ks/t", "migrator", "migrator", false},
		{"cassandra://127.0.0.1:9042/ks/t", "", "envuser", false},
	} {
		cfg, err := CommandConfig(c.uri, "", source.Input{Flags: &Flags{user: c.flag}, Getenv: getenv})
		switch {
		case c.refused && (err == nil || !strings.Contains(err.Error(), "--cassandra-user migrator") || !strings.Contains(err.Error(), "app@")):
			t.Errorf("%s --cassandra-user %s: %v, want refused naming both users", c.uri, c.flag, err)
		case !c.refused && err != nil:
			t.Errorf("%s --cassandra-user %q: %v", c.uri, c.flag, err)
		case !c.refused && cfg.Username != c.want:
			t.Errorf("%s --cassandra-user %q: user %q, want %q", c.uri, c.flag, cfg.Username, c.want)
		}
	}
}

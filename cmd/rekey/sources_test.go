package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/kafka"
)

// TestSourceURIPasswordsRefusedAndMasked: before, kafka:// URIs echoed the secret in error messages
// when written PASSWORD=, pass%77ord=, a repeated password= (only the first was masked) or
// kafka://u:pw@host (whose password was also used silently), and cassandra:// echoed ?PASSWORD=.
// Every command now refuses a password in a URI with one error that says which environment variable
// to set, and nothing it prints holds the secret.
func TestSourceURIPasswordsRefusedAndMasked(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-s3cr3t"
	// 127.0.0.1:1 refuses connections: nothing may get as far as dialling
	for _, c := range []struct {
		uri string
		env string // the variable the error must name; "" for URIs no source takes
	}{
		{"kafka://127.0.0.1:1/orders?sasl=plain&user=u&password=" + secret, kafka.PasswordEnv},
		{"kafka://127.0.0.1:1/orders?sasl=plain&user=u&PASSWORD=" + secret, kafka.PasswordEnv},
		{"kafka://127.0.0.1:1/orders?sasl=plain&user=u&pass%77ord=" + secret, kafka.PasswordEnv},
		{"kafka://127.0.0.1:1/orders?sasl=plain&user=u&password=x&password=" + secret, kafka.PasswordEnv},
		{"kafka://u:" + secret + "@127.0.0.1:1/orders", kafka.PasswordEnv},
		{"kafka://u:" + secret + "@127.0.0.1:1/orders?group=g", kafka.PasswordEnv},
		{"kafka://127.0.0.1:1/orders?group=g&sasl.password=" + secret, kafka.PasswordEnv},
		{"cassandra://127.0.0.1:1/shop/orders?PASSWORD=" + secret, cassandra.PasswordEnv},
		{"cassandra://127.0.0.1:1/shop/orders?password=" + secret, cassandra.PasswordEnv},
		{"cassandra://app:" + secret + "@127.0.0.1:1/shop/orders", cassandra.PasswordEnv},
		{"KAFKA://u:" + secret + "@127.0.0.1:1/orders", ""}, // no source of this name: quoted, masked
		{"mysql://127.0.0.1:1/shop?password=" + secret, ""},
	} {
		commands := [][]string{
			{"migrate", "--out", filepath.Join(t.TempDir(), "out"), "--progress", "never"},
			{"report"},
			{"check"},
		}
		if strings.HasPrefix(c.uri, "kafka://") {
			commands = append(commands, []string{"replicate", "--out", filepath.Join(t.TempDir(), "out")})
		}
		for _, cmd := range commands {
			args := append(cmd, "-m", filepath.Join("..", "..", "mappings", "orders.yaml"), "--source", c.uri)
			code, out, errs := runCLI(t, args...)
			if code == 0 {
				t.Errorf("rekey %s --source %s: exit 0", cmd[0], c.uri)
				continue
			}
			if strings.Contains(out+errs, secret) {
				t.Errorf("rekey %s --source %s: the secret shows:\n%s%s", cmd[0], c.uri, out, errs)
			}
			if c.env != "" && (!strings.Contains(errs, c.env) || !strings.Contains(errs, "password in the URI")) {
				t.Errorf("rekey %s --source %s: the error does not say to set %s:\n%s", cmd[0], c.uri, c.env, errs)
			}
		}
	}
}

// A parameter given twice in a source URI is refused, naming it, in every kind of source: gen:
// ran the last of rows=100&rows=5, cassandra:// read the last of two splits=. Which one the user
// meant is a guess. 127.0.0.1:1 refuses connections: nothing may get as far as dialling.
func TestSourceURIRepeatedParametersRefused(t *testing.T) {
	t.Parallel()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	dir := t.TempDir()
	csv := ordersCSV(t, dir, "orders.csv", 10, 1)
	for _, c := range []struct{ uri, param string }{
		{"gen:orders?rows=100&rows=5", "rows"},
		{"file:" + csv + "?format=csv&format=csv", "format"},
		{"cassandra://127.0.0.1:1/shop/orders?splits=8&splits=16", "splits"},
		{"cassandra://127.0.0.1:1/shop/orders?since=2025-01-01T00:00:00Z&SINCE=2025-02-01T00:00:00Z", "since"},
		{"kafka://127.0.0.1:1/orders?start=earliest&start=earliest", "start"},
		{"s3://bucket/orders/*.csv?region=us-east-1&region=eu-west-1&endpoint=http://127.0.0.1:1", "region"},
	} {
		out := filepath.Join(dir, "out")
		code, stdout, stderr := runCLIWithEnv(t, map[string]string{"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"},
			"migrate", "-m", mapping, "--source", c.uri, "--out", out, "--progress", "never")
		if code != exitUsage || !strings.Contains(stderr, c.param) || !strings.Contains(stderr, "given") {
			t.Errorf("--source %s: exit %d, want 2 naming %s given more than once\n%s%s", c.uri, code, c.param, stdout, stderr)
		}
	}
}

package cassandra

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/source"
)

// --cassandra-password-file and REKEY_CASSANDRA_PASSWORD both give the password: two different
// ones are refused, naming both sources and quoting neither (the file used to win without a
// word, so the variable, set for this login, was ignored); the same password twice, or either
// alone, is taken.
func TestPasswordFileAndVariableMustAgree(t *testing.T) {
	file := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(file, []byte("from-file-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(pw string) func(string) string {
		return func(k string) string {
			switch k {
			case PasswordEnv:
				return pw
			case UserEnv:
				return "app"
			}
			return ""
		}
	}
	const uri = "cassandra://127.0.0.1:9042/ks/t"
	_, err := CommandConfig(uri, "", source.Input{Flags: &Flags{passwordFile: file}, Getenv: env("from-env-pw")})
	if err == nil || !strings.Contains(err.Error(), "--cassandra-password-file") || !strings.Contains(err.Error(), PasswordEnv) {
		t.Fatalf("two different passwords: %v, want refused naming --cassandra-password-file and %s", err, PasswordEnv)
	}
	if strings.Contains(err.Error(), "from-env-pw") || strings.Contains(err.Error(), "from-file-pw") {
		t.Fatalf("the error quotes a password: %v", err)
	}
	for _, c := range []struct{ file, env, want string }{
		{file, "from-file-pw", "from-file-pw"},
		{file, "", "from-file-pw"},
		{"", "from-env-pw", "from-env-pw"},
	} {
		cfg, err := CommandConfig(uri, "", source.Input{Flags: &Flags{passwordFile: c.file}, Getenv: env(c.env)})
		if err != nil || cfg.Password != c.want {
			t.Errorf("file %q, variable %q: password %q, %v; want %q", c.file, c.env, cfg.Password, err, c.want)
		}
	}
}

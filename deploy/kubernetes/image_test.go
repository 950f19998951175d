package kubernetes

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTools makes a PATH folder holding the host's commands image.sh needs, a go that records its
// arguments in calls and writes the binary it is asked for, and the builders named (each recording
// its arguments too).
func fakeTools(t *testing.T, calls string, builders ...string) string {
	t.Helper()
	bin := t.TempDir()
	for _, name := range []string{"bash", "dirname", "mktemp", "rm", "mkdir", "chmod", "cp"} {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("%s not installed: %v", name, err)
		}
		if err := os.Symlink(path, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	record := "#!" + filepath.Join(bin, "bash") + "\necho \"$(basename \"$0\") $*\" >> " + calls + "\n"
	goScript := record + `while [ $# -gt 0 ]; do if [ "$1" = -o ]; then echo binary > "$2"; fi; shift; done` + "\n"
	write := func(name, script string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("basename", "#!"+filepath.Join(bin, "bash")+"\necho \"${1##*/}\"\n")
	write("go", goScript)
	for _, b := range builders {
		write(b, record)
	}
	return bin
}

func runImageScript(t *testing.T, bin string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "bash"), "../image.sh", "test/rekey:dev")
	certs := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Env = []string{"PATH=" + bin, "VERSION=test", "CA_CERTS=" + certs, "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Without podman or buildah, image.sh stops before building anything (the Go build takes minutes
// on a cold cache) and says how to install one.
func TestImageScriptChecksItsToolsFirst(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	out, err := runImageScript(t, fakeTools(t, calls))
	if err == nil {
		t.Fatalf("image.sh without podman or buildah succeeded:\n%s", out)
	}
	if !strings.Contains(out, "neither podman nor buildah") || !strings.Contains(out, "apt-get install podman") {
		t.Fatalf("image.sh does not say what to install:\n%s", out)
	}
	if ran, _ := os.ReadFile(calls); len(ran) > 0 {
		t.Fatalf("image.sh ran before failing:\n%s\nit said:\n%s", ran, out)
	}
}

// With a builder, image.sh builds the static binary, then the image with that builder.
func TestImageScriptBuildsWithTheBuilderFound(t *testing.T) {
	for _, builder := range []string{"podman", "buildah"} {
		t.Run(builder, func(t *testing.T) {
			calls := filepath.Join(t.TempDir(), "calls")
			out, err := runImageScript(t, fakeTools(t, calls, builder))
			if err != nil {
				t.Fatalf("image.sh: %v\n%s", err, out)
			}
			ran, _ := os.ReadFile(calls)
			lines := strings.Split(strings.TrimSpace(string(ran)), "\n")
			sub := map[string]string{"podman": "build", "buildah": "bud"}[builder]
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "go build ") || !strings.HasPrefix(lines[1], builder+" "+sub+" ") ||
				!strings.Contains(lines[1], "-t test/rekey:dev") {
				t.Fatalf("image.sh ran:\n%s\nwant go build, then %s %s ... -t test/rekey:dev", ran, builder, sub)
			}
		})
	}
}

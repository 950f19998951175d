package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/wait"
)

// rekeyProc is a `rekey replicate` process of its own (the test binary run as the rekey command,
// rekeyProcessEnv), which a test SIGKILLs and starts again with the same arguments; every start
// appends its output to one log and serves /metrics and /healthz on a port the process binds
// itself (--metrics-addr 127.0.0.1:0, the address read back from its log): a port picked free by
// the test could be taken by another connection before the process bound it.
type rekeyProc struct {
	name, exe, logPath string
	args               []string

	proc    *exec.Cmd
	exited  chan struct{}
	metrics string // the running process's /metrics address, once its log told it
	starts  int
	kills   int
}

// start runs the process; env adds to the test's environment (killAtEnv, for one).
func (p *rekeyProc) start(t *testing.T, env ...string) {
	t.Helper()
	p.starts++
	p.metrics = ""
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	fmt.Fprintf(log, "=== start %d %s\n", p.starts, strings.Join(env, " "))
	cmd := exec.Command(p.exe, append(p.args, "--metrics-addr", "127.0.0.1:0")...)
	cmd.Env = append(append(os.Environ(), rekeyProcessEnv+"=1"), env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start rekey: %v", err)
	}
	p.proc, p.exited = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(p.exited) }()
}

// alive tells whether the process runs.
func (p *rekeyProc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// checkAlive fails the test when the process exited without being told to.
func (p *rekeyProc) checkAlive(t *testing.T) {
	t.Helper()
	if !p.alive() {
		t.Fatalf("%s: rekey exited on its own (%v) after start %d\n%s", p.name, p.proc.ProcessState, p.starts, p.logTail())
	}
}

var metricsClient = http.Client{Timeout: time.Second}

// served is the address the running process serves /metrics and /healthz on, "" until it logged it.
func (p *rekeyProc) served() string {
	if p.metrics == "" {
		p.metrics = servedMetricsAddr(p.logSinceStart())
	}
	return p.metrics
}

// servedMetricsAddr is the address in the last "serving /metrics" line of a rekey log, "" if none.
func servedMetricsAddr(log string) string {
	m := servedLine.FindAllStringSubmatch(log, -1)
	if m == nil {
		return ""
	}
	return m[len(m)-1][1]
}

var servedLine = regexp.MustCompile(`serving /metrics and /healthz\s+\{"addr": "([^"]+)"\}`)

// metric reads a counter of the running process; ok is false while it does not serve /metrics.
func (p *rekeyProc) metric(name string) (v float64, ok bool) {
	addr := p.served()
	if addr == "" {
		return 0, false
	}
	resp, err := metricsClient.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, found := strings.CutPrefix(sc.Text(), name+" "); found {
			v, err := strconv.ParseFloat(rest, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// health is the process's /healthz answer ("ok consuming since ...", "ok joining since ..."),
// "" while it serves none.
func (p *rekeyProc) health() string {
	addr := p.served()
	if addr == "" {
		return ""
	}
	resp, err := metricsClient.Get("http://" + addr + "/healthz")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(body))
}

// consuming tells whether the process has joined its group's generation and consumes what it
// was assigned (possibly nothing).
func (p *rekeyProc) consuming() bool { return strings.HasPrefix(p.health(), "ok consuming") }

// kill SIGKILLs the running process.
func (p *rekeyProc) kill(t *testing.T) {
	t.Helper()
	p.checkAlive(t)
	p.proc.Process.Signal(syscall.SIGKILL)
	<-p.exited
	if ws, ok := p.proc.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("%s: rekey ended with %v before the SIGKILL\n%s", p.name, p.proc.ProcessState, p.logTail())
	}
	p.kills++
}

// terminate stops the process with SIGTERM and returns its exit code. It waits for the process
// to consume first: a SIGTERM while it starts (before it handles the signal) kills it, as a
// SIGKILL would.
func (p *rekeyProc) terminate(t *testing.T) int {
	t.Helper()
	wait.For(t, func() bool {
		p.checkAlive(t)
		return p.consuming()
	}, fmt.Sprintf("%s to consume after start %d", p.name, p.starts))
	p.proc.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.proc.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: rekey did not stop 30 s after SIGTERM\n%s", p.name, p.logTail())
		return -1
	}
}

// wait waits for the process to end on its own and returns its exit code (-1: killed by a signal).
func (p *rekeyProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(wait.Timeout):
		t.Fatalf("%s: rekey did not end within %s\n%s", p.name, wait.Timeout, p.logTail())
	}
	return p.proc.ProcessState.ExitCode()
}

// waitKilled waits for the process to reach the kill point of its killAtEnv and die of SIGKILL.
func (p *rekeyProc) waitKilled(t *testing.T) {
	t.Helper()
	p.wait(t)
	if ws, ok := p.proc.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("%s: rekey ended with %v, not at its kill point\n%s", p.name, p.proc.ProcessState, p.logTail())
	}
	p.kills++
}

// stop SIGKILLs the process if it runs (a test's cleanup).
func (p *rekeyProc) stop() {
	if p.proc != nil && p.proc.ProcessState == nil {
		p.proc.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
}

// logSinceStart is the output of the running process (since its start's line in the log).
func (p *rekeyProc) logSinceStart() string {
	data, _ := os.ReadFile(p.logPath)
	mark := fmt.Sprintf("=== start %d ", p.starts)
	if i := strings.LastIndex(string(data), mark); i >= 0 {
		return string(data[i:])
	}
	return ""
}

func (p *rekeyProc) logTail() string {
	data, _ := os.ReadFile(p.logPath)
	if len(data) > 6000 {
		data = data[len(data)-6000:]
	}
	return "--- rekey's output (end) ---\n" + string(data)
}

// Package benchproc is what the multi-process benchmarks (bench/kafka, bench/cassandra) share:
// a server child that prints its address and serves until its stdin closes, and the figures of a
// finished child process (wall time from its start, CPU time, peak RSS).
package benchproc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Figures are one side's measurements, in the JSON bench/run.sh records.
type Figures struct {
	Rows       int64   `json:"rows_in"`
	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_sec"`
	PeakRSS    int64   `json:"peak_rss_bytes"`
	CPUSeconds float64 `json:"cpu_seconds"`    // user + system time of the process
	Runs       []int64 `json:"runs,omitempty"` // rows/s of every run, sorted (medians only)
	// Start is the time from the process start to its first result (a reader's first message,
	// replicate's first committed offset), where a benchmark measures it
	Start float64 `json:"start_seconds,omitempty"`
}

// Measure returns the figures of a finished child that processed n rows in d.
func Measure(n int64, d time.Duration, ps *os.ProcessState) Figures {
	f := Figures{Rows: n, Seconds: d.Seconds(), RowsPerSec: float64(n) / d.Seconds()}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		f.PeakRSS = ru.Maxrss * 1024 // Linux reports KiB
		f.CPUSeconds = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	return f
}

// Median is the run with the median rate, listing every run's rate. T is Figures, or a type
// embedding it (a side with figures of its own).
func Median[T any, P interface {
	*T
	figures() *Figures
}](runs []T) T {
	s := append([]T(nil), runs...)
	sort.Slice(s, func(i, j int) bool { return P(&s[i]).figures().RowsPerSec < P(&s[j]).figures().RowsPerSec })
	m := s[len(s)/2]
	mf := P(&m).figures()
	mf.Runs = nil
	for i := range s {
		mf.Runs = append(mf.Runs, int64(P(&s[i]).figures().RowsPerSec))
	}
	return m
}

func (f *Figures) figures() *Figures { return f }

// Server is a child process serving until Stop.
type Server struct {
	cmd   *exec.Cmd
	stdin interface{ Close() error }
	// Addrs is the comma-separated first line the child printed.
	Addrs []string
}

// StartServer runs the command, waits for the first line it prints (its addresses) and returns.
func StartServer(name string, args ...string) (*Server, error) {
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{cmd: cmd, stdin: stdin}
	var line string
	if _, err := fmt.Fscanln(stdout, &line); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%s did not start: %w", name, err)
	}
	s.Addrs = strings.Split(line, ",")
	return s, nil
}

// PID is the child's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop closes the child's stdin (its signal to exit) and waits for it.
func (s *Server) Stop() {
	s.stdin.Close()
	s.cmd.Wait()
}

// WriteJSON prints res and writes it to out (when set), and each side's figures next to it as
// OUT-NAME.json for bench/run.sh.
func WriteJSON[T any](out string, res map[string]any, sides map[string]T) error {
	data, _ := json.MarshalIndent(res, "", "  ")
	fmt.Println(string(data))
	if out == "" {
		return nil
	}
	if err := os.WriteFile(out, append(data, '\n'), 0o644); err != nil {
		return err
	}
	for name, f := range sides {
		d, _ := json.MarshalIndent(f, "", "  ")
		if err := os.WriteFile(strings.TrimSuffix(out, ".json")+"-"+name+".json", d, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ProcCPU is a running process's user + system time so far, in seconds, from /proc/PID/stat
// (fields 14 and 15, in clock ticks of 1/100 s: USER_HZ is 100 on Linux whatever the kernel's HZ).
func ProcCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
	}
	// the command name (field 2) is in parentheses and may hold spaces: count from the last ')'
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("CPU time of process %d: /proc/%d/stat: %q", pid, pid, b)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("CPU time of process %d: /proc/%d/stat: %q", pid, pid, b)
	}
	return (utime + stime) / 100, nil
}

// CheckWritten reads rekey's --stats-json at path and checks that every one of n rows was written.
func CheckWritten(path string, n int64) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var st struct {
		Written  int64 `json:"rows_written"`
		Rejected int64 `json:"rows_rejected"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if st.Written != n {
		return fmt.Errorf("rekey migrate wrote %d rows (%d rejected), want %d", st.Written, st.Rejected, n)
	}
	return nil
}

// ProcMemory is a field of a process's /proc/PID/status in bytes ("VmRSS", its resident set now;
// "VmHWM", its peak), 0 when unknown.
func ProcMemory(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// LoadAvg is /proc/loadavg's 1-minute figure: how busy the shared cores were.
func LoadAvg() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// WaitRead polls rekey's /metrics until it has read n messages.
func WaitRead(addr string, n int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if v, ok := MetricValue(string(body), "rekey_messages_in_total"); ok && v >= float64(n) {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("rekey did not read %d messages within %v", n, timeout)
}

// MetricValue is the value of an unlabelled metric in Prometheus' text format, which writes
// large counts in exponent form (2e+06).
func MetricValue(body, name string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// WithArgs returns base with extra after it, less base's flags that extra gives again (with
// their values): rekey refuses a flag given twice with different values, and a bench's
// -rekey-args overrides its defaults (--roll-interval 500ms for the default's 1m). base's flags
// are "--name value" pairs or lone "--name" switches before the next flag; extra's may be
// "--name=value" too.
func WithArgs(base, extra []string) []string {
	given := map[string]bool{}
	for _, a := range extra {
		if strings.HasPrefix(a, "-") {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			given[name] = true
		}
	}
	out := make([]string, 0, len(base)+len(extra))
	for i := 0; i < len(base); i++ {
		a := base[i]
		if strings.HasPrefix(a, "-") && given[strings.TrimLeft(a, "-")] {
			if i+1 < len(base) && !strings.HasPrefix(base[i+1], "-") {
				i++ // its value
			}
			continue
		}
		out = append(out, a)
	}
	return append(out, extra...)
}

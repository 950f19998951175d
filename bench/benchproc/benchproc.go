// Package benchproc is what the multi-process benchmarks (bench/kafka, bench/cassandra) share:
// a server child that prints its address and serves until its stdin closes, and the figures of a
// finished child process (wall time from its start, CPU time, peak RSS).
package benchproc

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
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

package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// progressModes is the --progress help text shared by the commands that move rows.
const progressModes = "progress display on stderr: auto (a bar on a terminal, a plain line every --progress-interval otherwise), bar, plain, never"

// progress shows a long run's progress on stderr: a bar on a terminal; with no terminal
// (Kubernetes, nohup, CI) a plain line every interval, without carriage returns or colours, so
// that logs stay readable.
type progress struct {
	bar  *progressbar.ProgressBar
	done chan struct{}
	wg   sync.WaitGroup
	fin  func() // final update before the bar closes
}

// progressFigures is what a progress display reads while a run goes on.
type progressFigures struct {
	what     string // "migrating"
	counters *pipeline.Counters
	bytes    func() int64
	// statements, when set, are a table's (a SQL target's), shown instead of bytes, as its
	// summary shows them
	statements func() int64
	total      int64 // rows expected, -1 when unknown
	// rowsOnly: the phase counts rows and nothing is written or rejected in it (verify reading
	// its target, comparing), or each table of a run counts its own (migrate -m a -m b): the
	// line shows rows, not "0 written, 0 rejected".
	rowsOnly bool
	// accepted: the phase writes nothing (report, verify reading its source): the rows the mapping
	// keeps are counted as accepted, not as written
	accepted bool
	// before is what an earlier attempt of a resumed run read: counted in the totals, not in the rate
	before int64
}

// progressFlags are --progress and --progress-interval.
type progressFlags struct {
	mode     string
	interval time.Duration
	stderr   io.Writer // where the progress shows: the invocation's stderr
	// statements, when set, count a SQL target's statements, which start shows instead of bytes
	statements func() int64
}

func (p *progressFlags) register(inv *invocation, fl *pflag.FlagSet) {
	p.stderr = inv.stderr
	fl.StringVar(&p.mode, "progress", "auto", progressModes)
	fl.DurationVar(&p.interval, "progress-interval", 10*time.Second, "how often a plain progress line is printed when there is no terminal (refused with --progress never or bar)")
}

// progressMode resolves --progress against the terminal: "bar", "plain" or "never".
func progressMode(mode string, tty bool) (string, error) {
	switch mode {
	case "auto":
		if tty {
			return "bar", nil
		}
		return "plain", nil
	case "bar", "always":
		return "bar", nil
	case "plain", "never":
		return mode, nil
	}
	return "", fmt.Errorf("--progress %q: want auto, bar, plain or never", mode)
}

// before is the rows a resumed run's earlier attempts read (0 for a new run).
func (pf progressFlags) start(what string, src pipeline.Source, c *pipeline.Counters, bytes func() int64, before int64) (*progress, error) {
	f := progressFigures{what: what, counters: c, bytes: bytes, total: estimatedRows(src), before: before}
	if pf.statements != nil {
		f.bytes, f.statements = nil, pf.statements
	}
	return pf.show(f)
}

// startAccepted shows a phase that reads and maps rows but writes none (report, verify reading
// its source), total of them when known (> 0).
func (pf progressFlags) startAccepted(what string, total int64, c *pipeline.Counters) (*progress, error) {
	return pf.show(progressFigures{what: what, counters: c, total: total, accepted: true})
}

// startRows shows a phase that only counts rows (c.RowsIn), total of them when known (> 0).
func (pf progressFlags) startRows(what string, total int64, c *pipeline.Counters) (*progress, error) {
	return pf.show(progressFigures{what: what, counters: c, total: total, rowsOnly: true})
}

func (pf progressFlags) show(f progressFigures) (*progress, error) {
	mode, err := progressMode(pf.mode, isTerminal(pf.stderr))
	if err != nil {
		return nil, err
	}
	p := &progress{done: make(chan struct{})}
	if mode == "never" {
		return p, nil
	}
	if mode == "plain" {
		p.plain(pf.stderr, pf.interval, f)
	} else {
		p.startBar(pf.stderr, f)
	}
	return p, nil
}

// plain prints one line per interval and a last one, without an ETA, when the run ends.
func (p *progress) plain(w io.Writer, interval time.Duration, f progressFigures) {
	if interval <= 0 {
		interval = 10 * time.Second
	}
	started := time.Now()
	line := func() { fmt.Fprintln(w, plainLine(f, time.Since(started))) }
	last := f
	last.total = -1 // the run has ended: no ETA, however far off the estimate was
	p.fin = func() { fmt.Fprintln(w, plainLine(last, time.Since(started))) }
	p.every(interval, line)
}

// every calls fn each interval until finish.
func (p *progress) every(interval time.Duration, fn func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

// plainLine is one progress line: `migrating: 1,200,000 rows read, 1,199,990 written, 10
// rejected, 240,000 rows/s, 61.2 MiB, elapsed 5s, ETA 20s (of ~6,000,000)`.
func plainLine(f progressFigures, elapsed time.Duration) string {
	c := f.counters
	// a worker counts a batch's rows read before what became of them: read in the other order,
	// the line never shows more rows written, rejected or skipped than read
	written, rejected, skipped := c.RowsWritten.Load(), c.RowsRejected.Load(), c.RowsSkipped.Load()
	in := c.RowsIn.Load()
	var b strings.Builder
	if f.rowsOnly {
		fmt.Fprintf(&b, "%s: %s rows", f.what, groupDigits(in))
	} else {
		kept := "written"
		if f.accepted {
			kept = "accepted"
		}
		fmt.Fprintf(&b, "%s: %s rows read, %s %s, %s rejected", f.what, groupDigits(in), groupDigits(written), kept, groupDigits(rejected))
		// rows the source left out (since=, every cell expired): without them the figures
		// would not add up to the rows read
		if skipped > 0 {
			fmt.Fprintf(&b, ", %s skipped", groupDigits(skipped))
		}
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 && in > f.before {
		rate = float64(in-f.before) / s
	}
	fmt.Fprintf(&b, ", %s rows/s", groupDigits(int64(rate)))
	if f.bytes != nil {
		fmt.Fprintf(&b, ", %s written", transform.FormatSize(f.bytes()))
	}
	if f.statements != nil {
		fmt.Fprintf(&b, ", %s statements", groupDigits(f.statements()))
	}
	fmt.Fprintf(&b, ", elapsed %s", elapsed.Round(time.Second))
	if f.total > 0 && rate > 0 && in < f.total {
		eta := time.Duration(float64(f.total-in) / rate * float64(time.Second))
		fmt.Fprintf(&b, ", ETA %s (of ~%s)", eta.Round(time.Second), groupDigits(f.total))
	}
	return b.String()
}

// groupDigits writes n with thousands separators.
func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// startBar draws a bar whose rate is computed here: the library's own shows "0 rows/hr" until
// the first rows arrive.
func (p *progress) startBar(w io.Writer, f progressFigures) {
	total := f.total
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(f.what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetPredictTime(total > 0),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSpinnerType(14),
	)
	started := time.Now()
	update := func() {
		// what became of the rows before the rows read, which a worker counts first (plainLine)
		rejected, skipped := f.counters.RowsRejected.Load(), f.counters.RowsSkipped.Load()
		in := f.counters.RowsIn.Load()
		if total > 0 && in > total { // the estimate was low: grow the bar rather than overflow it
			total = in + in/10
			p.bar.ChangeMax64(total)
		}
		desc := f.what
		if s := time.Since(started).Seconds(); in > f.before && s > 0 {
			desc += fmt.Sprintf("  %s rows/s", groupDigits(int64(float64(in-f.before)/s)))
		}
		if f.bytes != nil {
			desc += fmt.Sprintf("  %s written", transform.FormatSize(f.bytes()))
		}
		if f.statements != nil {
			desc += fmt.Sprintf("  %s statements", groupDigits(f.statements()))
		}
		if !f.rowsOnly {
			desc += fmt.Sprintf("  %s rejected", groupDigits(rejected))
			if skipped > 0 {
				desc += fmt.Sprintf("  %s skipped", groupDigits(skipped))
			}
		}
		p.bar.Describe(desc)
		p.bar.Set64(in)
	}
	p.fin = func() {
		// An estimated total was only an estimate: end at 100% of what was really read.
		if in := f.counters.RowsIn.Load(); total > 0 && in != total {
			total = in
			p.bar.ChangeMax64(in)
		}
		update()
	}
	p.every(250*time.Millisecond, update)
}

func (p *progress) finish() {
	close(p.done)
	p.wg.Wait()
	if p.fin != nil {
		p.fin()
	}
	if p.bar != nil {
		p.bar.Finish()
		p.bar.Exit()
	}
}

// table prints aligned two-column rows.
func table(w io.Writer, rows [][2]string) {
	width := 0
	for _, r := range rows {
		if len(r[0]) > width {
			width = len(r[0])
		}
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-*s  %s\n", width, r[0], r[1])
	}
}

package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// progress draws a bar on stderr while a run is in progress: rows, rows/s, MB written and, when
// the source knows its size, the ETA. It stays silent when stderr is not a terminal (CI, logs).
type progress struct {
	bar  *progressbar.ProgressBar
	done chan struct{}
	wg   sync.WaitGroup
}

func startProgress(mode, what string, src pipeline.Source, c *pipeline.Counters, bytes func() int64) *progress {
	p := &progress{done: make(chan struct{})}
	show := mode == "always" || (mode == "auto" && term.IsTerminal(int(os.Stderr.Fd())))
	if !show {
		return p // and no row estimate: it may cost the source a query
	}
	total := estimatedRows(src)
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("rows"),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetPredictTime(total > 0),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSpinnerType(14),
	)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				in := c.RowsIn.Load()
				if total > 0 && in > total { // the estimate was low: grow the bar rather than overflow it
					total = in + in/10
					p.bar.ChangeMax64(total)
				}
				p.bar.Describe(fmt.Sprintf("%s  %s written  %d rejected", what, transform.FormatSize(bytes()), c.RowsRejected.Load()))
				p.bar.Set64(in)
			}
		}
	}()
	return p
}

func (p *progress) finish() {
	close(p.done)
	p.wg.Wait()
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

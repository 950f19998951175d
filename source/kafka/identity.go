package kafka

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rekey/rekey/pipeline"
)

var (
	_ pipeline.Identifier      = (*Window)(nil)
	_ pipeline.IdentityAdopter = (*Window)(nil)
)

// Identity is the topic, its partition count, the message format and the window's offsets per
// partition ("0:[100,2100) 1:[..."): a resume reads exactly the window the first run fixed; and
// keycol=, when set: the column a plain message key fills is part of every row read.
func (w *Window) Identity() pipeline.Identity {
	id := pipeline.Identity{
		"topic":      w.cfg.Topic,
		"partitions": strconv.Itoa(len(w.parts)),
		"format":     w.cfg.Format,
		"window":     formatWindow(w.parts),
	}
	if w.cfg.KeyColumn != "" {
		id["keycol"] = w.cfg.KeyColumn
	}
	// start= and max= ask for the window: a resume given others asks for another than the
	// first run fixed (a checkpoint of an earlier rekey recorded neither)
	if !w.unrecordedAsk {
		id["start"] = w.cfg.Start
		if w.cfg.Max > 0 {
			id["max"] = strconv.FormatInt(w.cfg.Max, 10)
		}
	}
	return id
}

// AdoptIdentity takes over the recorded window when the topic and its partitions are the same:
// the topic grew since the first run, and a resumed run must read the first run's window, not
// one that ends at today's offsets. A mismatch is left for the identity comparison to report,
// as is another start= or max= than the first run's, which asks for another window.
func (w *Window) AdoptIdentity(recorded pipeline.Identity) error {
	if _, ok := recorded["start"]; !ok {
		w.unrecordedAsk = true // an earlier rekey's checkpoint: only its window is compared
	}
	if recorded["topic"] != w.cfg.Topic || recorded["partitions"] != strconv.Itoa(len(w.parts)) {
		return nil
	}
	parts, err := parseWindow(recorded["window"])
	if err != nil {
		return fmt.Errorf("kafka: the checkpoint's window %q: %w", recorded["window"], err)
	}
	if len(parts) != len(w.parts) {
		return nil
	}
	for i := range parts {
		if parts[i].partition != w.parts[i].partition {
			return nil
		}
	}
	w.parts, w.total = parts, 0
	for _, p := range parts {
		w.total += p.end - p.start
	}
	return nil
}

func formatWindow(parts []windowPart) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:[%d,%d)", p.partition, p.start, p.end)
	}
	return b.String()
}

func parseWindow(s string) ([]windowPart, error) {
	var parts []windowPart
	for _, f := range strings.Fields(s) {
		var p windowPart
		if _, err := fmt.Sscanf(f, "%d:[%d,%d)", &p.partition, &p.start, &p.end); err != nil || p.end < p.start {
			return nil, fmt.Errorf("bad partition window %q", f)
		}
		parts = append(parts, p)
	}
	return parts, nil
}

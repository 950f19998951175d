package main

import (
	"strings"
	"time"

	"github.com/rekey/rekey/pipeline"
)

// catchupMargin is taken off the run's start for the next catch-up's since=: WRITETIMEs come
// from the clocks of the Cassandra coordinators (or clients), which may run behind this
// machine's. Rows read twice are harmless: writes to Lindorm are upserts.
const catchupMargin = 5 * time.Minute

// nextSince is the since= of the catch-up after this run of a source whose kind catches up
// (source.Kind.CatchUp: Cassandra's): its first attempt's start (a resume keeps it) less
// catchupMargin, so each catch-up reads the rows written since the previous one started. Zero
// for other sources and unknown starts.
func nextSince(catchUp bool, res pipeline.Result) time.Time {
	if !catchUp || res.StartedAt.IsZero() {
		return time.Time{}
	}
	return res.StartedAt.Add(-catchupMargin).UTC().Truncate(time.Second)
}

// withSince is the source URI with its since= parameter set to t (replaced, or added).
func withSince(uri string, t time.Time) string {
	base, query, _ := strings.Cut(uri, "?")
	var params []string
	for _, p := range strings.Split(query, "&") {
		if name, _, _ := strings.Cut(p, "="); p != "" && !strings.EqualFold(name, "since") {
			params = append(params, p)
		}
	}
	params = append(params, "since="+t.Format(time.RFC3339))
	return base + "?" + strings.Join(params, "&")
}

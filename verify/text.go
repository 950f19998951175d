package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rekey/rekey/pipeline"
)

// Verdict is the one-line outcome: "EQUAL: ..." or "DIFFERENT: ...".
func Verdict(r *Result) string {
	if r.Equal {
		s := fmt.Sprintf("EQUAL: the target holds all %d keys checked", r.KeysChecked)
		if r.KeysDeleted > 0 {
			s += fmt.Sprintf(", none of the %d %s the changes delete", r.KeysDeleted, plural(int(r.KeysDeleted), "key", "keys"))
		}
		if r.ExtraScope == ExtraAll {
			s += " and nothing else"
		}
		if r.Sample != "all" {
			s += " (sample: " + r.Sample + ")"
		}
		if r.RowsLost > 0 {
			// the last row of a key wins: what the source's others held is not in the target
			s += fmt.Sprintf("; but %d source %s in no target row: a later, different source row has the same key. Older versions of a record (a topic of rows) are meant to go; rows of different records mean the key does not tell them apart (rekey report's uniqueness finding names the columns they differ in)",
				r.RowsLost, plural(int(r.RowsLost), "row is", "rows are"))
		}
		return s
	}
	var parts []string
	if r.Missing > 0 {
		parts = append(parts, fmt.Sprintf("%d missing", r.Missing))
	}
	if r.Differ > 0 {
		parts = append(parts, fmt.Sprintf("%d differ", r.Differ))
	}
	if r.Extra != nil && *r.Extra > 0 {
		parts = append(parts, fmt.Sprintf("%d extra", *r.Extra))
	}
	if n := len(r.Files); n > 0 {
		parts = append(parts, fmt.Sprintf("%d data %s not as listed", n, plural(n, "file", "files")))
	}
	if r.ChangesSkipped > 0 {
		parts = append(parts, fmt.Sprintf("%d source changes not applied (%s)", r.ChangesSkipped, CodeCounts(r.SkippedCodes)))
	}
	if len(parts) == 0 && r.Unsettled != "" {
		return "NOT VERIFIED: " + r.Unsettled
	}
	if rows := r.RowsRead - r.RowsRejected - r.RowsSkipped; len(parts) == 0 && rows > 0 && r.Sample != "all" {
		// the source had keys: the sample's hash range held none of them
		return fmt.Sprintf("NOT VERIFIED: 0 keys checked: --sample %s picked none of the keys of the source's %d %s (keys are picked by their hash): give a larger share, or a row count (--sample 1000 checks up to 1,000 rows)",
			r.Sample, rows, plural(int(rows), "row", "rows"))
	}
	if len(parts) == 0 { // no difference, and nothing checked either
		return "NOT VERIFIED: 0 keys checked: the source gave no key to look for, and the target's rows were not all read"
	}
	return fmt.Sprintf("DIFFERENT: %s (of %d keys checked)", strings.Join(parts, ", "), r.KeysChecked)
}

// WriteText writes the terminal summary.
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Verify %s (table %s)\n", r.Mapping, r.Table)
	rows := summaryRows(r)
	width := 0
	for _, row := range rows {
		width = max(width, len(row[0]))
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, row[0], row[1])
	}
	writeExamples(&b, r)
	if len(r.Files) > 0 {
		fmt.Fprintf(&b, "\nData files not as the output lists them (the bulk load reads every file under data/):\n")
		for _, f := range r.Files {
			if f.Unlisted {
				fmt.Fprintf(&b, "  %s  %d rows, not listed: its rows are counted as target rows; remove it from data/ unless it belongs to this output\n", pipeline.EscapeControls(f.Path), f.Rows)
			} else {
				fmt.Fprintf(&b, "  %s  %d rows, listed as %d: the file or the listing was changed after the run\n", f.Path, f.Rows, *f.ListedRows)
			}
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nnote: %s\n", pipeline.EscapeControls(n))
	}
	fmt.Fprintf(&b, "\n%s\n", Verdict(r))
	_, err := io.WriteString(w, b.String())
	return err
}

// summaryRows are the summary's figures, a name and its value each, in the order shown.
func summaryRows(r *Result) [][2]string {
	rows := [][2]string{}
	add := func(k, v string) { rows = append(rows, [2]string{k, v}) }
	if r.Source != "" {
		add("source", r.Source)
	}
	if r.Target != "" {
		add("target", fmt.Sprintf("%s (%s)", r.Target, r.TargetKind))
	}
	if r.UpTo != "" {
		add("up to", r.UpTo)
	}
	add("sample", r.Sample)
	add("rows read", fmt.Sprint(r.RowsRead))
	if r.UpTo != "" { // a replication's changes
		add("rows rejected", fmt.Sprintf("%d (replicate rejects them too: not looked for)", r.RowsRejected))
	} else {
		add("rows rejected", fmt.Sprintf("%d (migrate rejects them too: not looked for)", r.RowsRejected))
	}
	if r.RowsSkipped > 0 {
		add("rows skipped", fmt.Sprintf("%d (left out by the source: older than since=, every cell expired, or events of other tables than source.table; migrate and replicate leave them out too: not looked for)", r.RowsSkipped))
	}
	if r.ChangesSkipped > 0 {
		add("changes skipped", fmt.Sprintf("%d (%s): neither replicate nor verify can apply them, so the target does not hold what the source holds; the rejects files name each message",
			r.ChangesSkipped, CodeCounts(r.SkippedCodes)))
	}
	add("rows checked", fmt.Sprint(r.RowsChecked))
	add("keys checked", fmt.Sprint(r.KeysChecked))
	if r.KeysDeleted > 0 {
		add("keys deleted", fmt.Sprintf("%d (the changes leave them no row: checked absent from the target)", r.KeysDeleted))
	}
	if r.RowsOverwritten > 0 {
		add("rows overwritten", fmt.Sprintf("%d (a later source row has the same key: the last one is compared)", r.RowsOverwritten))
		if r.RowsLost > 0 {
			add("  rows lost", fmt.Sprintf("%d (unlike the row that replaced them: their values are in no target row)", r.RowsLost))
		}
	}
	add("target rows", fmt.Sprint(r.TargetRows))
	add("missing", fmt.Sprint(r.Missing))
	add("differ", fmt.Sprint(r.Differ))
	for _, c := range r.DifferColumns {
		add("  "+c.Column, fmt.Sprint(c.Rows))
	}
	if r.Extra == nil || r.ExtraScope != ExtraAll {
		add("extra", extraText(r))
	} else {
		add("extra", fmt.Sprint(*r.Extra))
	}
	add("time", fmt.Sprintf("%.1fs (%.0f source rows/s)", r.Seconds, r.RowsPerSec))
	return rows
}

// writeExamples writes the examples of keys missing, differing and extra, with their columns.
func writeExamples(b *strings.Builder, r *Result) {
	for _, sec := range []struct {
		title string
		ex    []Example
	}{{"missing", r.Examples.Missing}, {"differ", r.Examples.Differ}, {"extra", r.Examples.Extra}} {
		if len(sec.ex) == 0 {
			continue
		}
		fmt.Fprintf(b, "\nExamples, %s:\n", sec.title)
		for _, e := range sec.ex {
			var key []string
			for _, c := range e.Key {
				key = append(key, c.Column+"="+pipeline.Printable(c.Value))
			}
			fmt.Fprintf(b, "  key %s  (%s)\n", strings.Join(key, ", "), pipeline.EscapeControls(e.Where))
			for _, d := range e.Columns {
				if sec.title == "differ" {
					fmt.Fprintf(b, "    %s: source %s, target %s\n", d.Column, pipeline.Printable(d.Source), pipeline.Printable(d.Target))
				} else {
					fmt.Fprintf(b, "    %s: %s\n", d.Column, pipeline.Printable(d.Target))
				}
			}
		}
	}
}

// CodeCounts lists counts by code, most first: "partial_update 2414, range_tombstone 644"
// (codes counted 0 are left out).
func CodeCounts(m map[string]int64) string {
	codes := make([]string, 0, len(m))
	for c, n := range m {
		if n > 0 {
			codes = append(codes, c)
		}
	}
	sort.Slice(codes, func(i, j int) bool {
		if m[codes[i]] != m[codes[j]] {
			return m[codes[i]] > m[codes[j]]
		}
		return codes[i] < codes[j]
	})
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%s %d", c, m[c])
	}
	return strings.Join(parts, ", ")
}

// extraText says what the extra rows counted cover when it is not every target row.
func extraText(r *Result) string {
	switch r.ExtraScope {
	case ExtraAll:
		return fmt.Sprintf("%d", *r.Extra)
	case ExtraRangesRead:
		return fmt.Sprintf("%d in the key ranges of the table read (not all were: rows of the others not checked)", *r.Extra)
	case ExtraSampledKeys:
		return fmt.Sprintf("%d among the sampled keys (rows of the other keys not checked)", *r.Extra)
	case ExtraDeletedKeys:
		return fmt.Sprintf("%d of the keys the changes delete (rows of keys the changes never name not checked)", *r.Extra)
	}
	return "not checked (a table read by key cannot list rows the source does not have)"
}

// WriteJSON writes the result as indented JSON.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

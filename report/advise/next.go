package advise

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rekey/rekey/report/model"
)

// NextSteps says what to do after reading the advisor: how to take a design other than the
// mapping's own (--write-mapping writes each as a mapping file), and, when every design is graded
// poor, what to change in the mapping before any of them is worth migrating with. The text and
// the HTML page print the same steps.
type NextSteps struct {
	Summary string   // one sentence
	Changes []string // when every design is poor: what to change first, one reason each
}

// NewNextSteps derives rep's next steps; nil without an advisor.
func NewNextSteps(rep *model.Report) *NextSteps {
	alts := rep.Alternatives
	if len(alts) == 0 {
		return nil
	}
	mapping := rep.Mapping.File
	if mapping == "" {
		mapping = "the mapping"
	}
	// written is the best-ranked design --write-mapping writes (never the mapping's own)
	var written *model.Alternative
	allPoor := true
	for i := range alts {
		a := &alts[i]
		if written == nil && !a.IsMapping && a.Error == "" && a.Edit.Pk != "" {
			written = a
		}
		allPoor = allPoor && a.Grade == "poor"
	}
	// dir is where the designs are written: this report's --write-mapping, or DIR when the
	// command did not give it
	dir, wrote := rep.WriteMappingDir, rep.WriteMappingDir != ""
	if !wrote {
		dir = "DIR"
	}
	writeHint := ""
	if written != nil {
		writeHint = fmt.Sprintf("--write-mapping DIR writes the other designs as mapping files (#%d as DIR/%s.yaml)", written.Rank, written.ID)
		if wrote {
			writeHint = fmt.Sprintf("the other designs are written as mapping files in %s (#%d as %s)", dir, written.Rank, filepath.Join(dir, written.ID+".yaml"))
		}
	}
	if !allPoor {
		best := &alts[0]
		switch {
		case best.IsMapping:
			s := fmt.Sprintf("the mapping's own design ranks first: migrate with %s as it is", mapping)
			if writeHint != "" {
				s += "; " + writeHint + " to compare"
			}
			return &NextSteps{Summary: s + "."}
		case best == written:
			file := filepath.Join(dir, best.ID+".yaml")
			check := "rekey check -m " + shellQuote(file)
			if best.Strategy == "quantile" { // its split keys are quantiles of the data: check samples the source
				src := rep.Source.URI
				if src == "" {
					src = "SOURCE"
				}
				check += " --source " + shellQuote(src)
			}
			if wrote {
				return &NextSteps{Summary: fmt.Sprintf("to take design #%d (%s), migrate with %s, which this report's --write-mapping wrote; %s prints its key and regions first.",
					best.Rank, best.Name, file, check)}
			}
			return &NextSteps{Summary: fmt.Sprintf("to take design #%d (%s), add --write-mapping DIR to this report's command: it writes each design as a mapping file, this one as DIR/%s.yaml; %s prints its key and regions, then migrate with it.",
				best.Rank, best.Name, best.ID, check)}
		}
		return nil
	}

	return &NextSteps{
		Summary: fmt.Sprintf("every design is graded poor: none is ready to migrate with. Change %s as below, then run this report again.", mapping),
		Changes: poorChanges(rep, writeHint),
	}
}

// poorChanges are the changes to make when every design is graded poor, one for each way the
// designs fail (they lose rows, reject rows, concentrate writes), then writeHint's.
func poorChanges(rep *model.Report, writeHint string) []string {
	alts := rep.Alternatives
	var changes []string
	var losing, rejecting, hot, buildable int
	for i := range alts {
		a := &alts[i]
		if a.Error != "" {
			continue
		}
		buildable++
		if a.Overwritten > 0 {
			losing++
		}
		if rows := a.Rows + a.Rejected; rows > 0 && a.Rejected*100 > rows {
			rejecting++
		}
		if spreadGrade(a) == "poor" {
			hot++
		}
	}
	of := func(n int, verbOne, verbMany string) string {
		if n == buildable {
			return "every design " + verbOne
		}
		return fmt.Sprintf("%d of %d designs %s", n, buildable, verbMany)
	}
	if losing > 0 {
		fix := "put columns that identify a source row in target.primary_key: the uniqueness finding names the columns the colliding rows differ in; if none fits in Lindorm's 5 key columns, give the source one (a sequence number or an event id) and key on it"
		if s := rep.Uniqueness.Suggestion; s != nil && len(s.Add) > 0 {
			fix = fmt.Sprintf("add %s to target.primary_key (%s), the uniqueness finding's key change", joinQuoted(s.Add), s.PrimaryKey)
		}
		changes = append(changes, fmt.Sprintf("%s rows (the key does not identify a source row): %s.", of(losing, "overwrites", "overwrite"), fix))
	}
	if rejecting > 0 {
		changes = append(changes, fmt.Sprintf("%s more than 1%% of the rows: the rejects finding says why; fix the mapping's column types or expressions, or the data (rekey migrate writes each rejected row to rejects.jsonl, naming the field).", of(rejecting, "rejects", "reject")))
	}
	if hot > 0 {
		changes = append(changes, fmt.Sprintf("%s writes in a few regions: lead the key with a column of many distinct values that does not grow with the write order, or a hash prefix of one (the write_hotspot and first_column_* findings say which column is at fault).", of(hot, "concentrates", "concentrate")))
	}
	if writeHint != "" {
		changes = append(changes, writeHint+", to start from one of them.")
	}
	return changes
}

func joinQuoted(cols []string) string {
	s := ""
	for i, c := range cols {
		switch {
		case i == 0:
		case i == len(cols)-1:
			s += " and "
		default:
			s += ", "
		}
		s += "`" + c + "`"
	}
	return s
}

// shellQuote quotes s for a POSIX shell when it needs it, so that a printed command runs as
// printed.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

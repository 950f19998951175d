package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/report/advise"
	"github.com/rekey/rekey/report/model"
	"github.com/rekey/rekey/report/render"
)

// outputs renders rep as text and as the HTML page.
func outputs(t *testing.T, rep *model.Report) (text, page string) {
	t.Helper()
	var tb, hb bytes.Buffer
	if err := render.WriteText(&tb, rep); err != nil {
		t.Fatal(err)
	}
	if err := render.WriteHTML(&hb, rep); err != nil {
		t.Fatal(err)
	}
	return tb.String(), hb.String()
}

// When a derived design outranks the mapping, the text and the page say how to take it: the
// --write-mapping file it is written to, which --write-mapping then writes.
func TestReportSaysHowToTakeTheBestDesign(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), events(5000), nil)
	best := rep.Alternatives[0]
	if best.IsMapping || best.Grade == "poor" {
		t.Fatalf("the fixture needs a derived design ranked first: %+v", best)
	}
	file := "DIR/" + best.ID + ".yaml"
	text, page := outputs(t, rep)
	for name, out := range map[string]string{"text": text, "html": page} {
		if !strings.Contains(out, "--write-mapping DIR") || !strings.Contains(out, file) {
			t.Errorf("the %s output does not say how to take design #1 (--write-mapping DIR, %s):\n%s", name, file, out)
		}
	}
	dir := t.TempDir()
	rep.Mapping.File = filepath.Join(dir, "events.yaml")
	if err := os.WriteFile(rep.Mapping.File, []byte(fmt.Sprintf(eventsYAML, "[ts][id]")), 0o644); err != nil {
		t.Fatal(err)
	}
	prog, _ := compile(t, fmt.Sprintf(eventsYAML, "[ts][id]"))
	if _, err := advise.WriteMappings(filepath.Join(dir, "designs"), rep.Mapping.File, rep, prog.Source()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "designs", best.ID+".yaml")); err != nil {
		t.Errorf("the file the report names is not the one --write-mapping writes: %v", err)
	}
}

// When the mapping's own design ranks first, the next step is to migrate with it.
func TestReportSaysToMigrateWhenTheMappingRanksFirst(t *testing.T) {
	rep := goldenReports(t)["prefix_splits_queries"]
	if !rep.Alternatives[0].IsMapping {
		t.Fatalf("the fixture needs the mapping ranked first: %+v", rep.Alternatives[0])
	}
	text, page := outputs(t, rep)
	for name, out := range map[string]string{"text": text, "html": page} {
		if !strings.Contains(strings.ReplaceAll(out, "&#39;", "'"), "the mapping's own design ranks first: migrate with test.yaml as it is") {
			t.Errorf("the %s output does not say to migrate with the mapping:\n%s", name, out)
		}
	}
}

// When every design is graded poor, the report says so and what to change: here every design
// overwrites rows, and no column fits the key to tell them apart.
func TestReportSaysWhatToChangeWhenEveryDesignIsPoor(t *testing.T) {
	rep := runReport(t, withoutRoomYAML, &memSource{n: 3000, make: withoutRoomRow}, nil)
	for _, a := range rep.Alternatives {
		if a.Grade != "poor" {
			t.Fatalf("the fixture needs every design poor: %+v", a)
		}
	}
	text, page := outputs(t, rep)
	for name, out := range map[string]string{"text": text, "html": page} {
		for _, want := range []string{
			"every design is graded poor: none is ready to migrate with",
			"every design overwrites rows (the key does not identify a source row)",
			"give the source one (a sequence number or an event id) and key on it",
			"--write-mapping DIR",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the %s output lacks %q:\n%s", name, want, out)
			}
		}
	}
}

// When the report's own command gave --write-mapping, the next step names the file it wrote
// rather than telling to add the flag. Before, `rekey report ... --write-mapping designs` still
// said "add --write-mapping DIR to this report's command" above the list of files it had written.
func TestReportNextStepNamesTheWrittenMapping(t *testing.T) {
	rep := runReport(t, fmt.Sprintf(eventsYAML, "[ts][id]"), events(5000), nil)
	best := rep.Alternatives[0]
	if best.IsMapping || best.Grade == "poor" {
		t.Fatalf("the fixture needs a derived design ranked first: %+v", best)
	}
	rep.WriteMappingDir = "designs"
	file := filepath.Join("designs", best.ID+".yaml")
	text, page := outputs(t, rep)
	for name, out := range map[string]string{"text": text, "html": page} {
		if strings.Contains(out, "add --write-mapping") || !strings.Contains(out, "rekey check -m "+file) {
			t.Errorf("the %s output does not name %s as written:\n%s", name, file, out)
		}
	}
}

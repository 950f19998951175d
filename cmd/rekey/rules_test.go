package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
)

// TestCheckPrintsDesignRules: check prints, as warnings with exit 0, the design guides' rules a
// mapping breaks: a TIMESTAMP first key column, more than 3 key columns, a collection in the key
// and no regions: section.
func TestCheckPrintsDesignRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := writeFile(t, dir, "events.yaml", `version: 1
source:
  name: ks.events
  columns: {ts: timestamp, id: timeuuid, tags: set<text>, a: text, v: text}
target:
  table: events
  primary_key: "[ts][id][tags][a]"
`)
	out := mustRun(t, "check", "-m", mapping)
	_, rules, _ := strings.Cut(out, "\nDesign rules")
	want := ` (Lindorm's wide-table and primary-key design guides):
  warning monotonic_first_key (target.primary_key[0]): the first key column ts is a TIMESTAMP: its values grow with time, so every write goes to the last region (a write hotspot); put a hash prefix first (md5(x).substr(0,4) + x) or a modulo bucket column (x % 16) before it
  warning many_key_columns (target.primary_key): 4 key columns: the design guide recommends 1-3 (fewer key columns write faster and store less)
  warning collection_in_key (target.primary_key[2]): key column tags is the collection set<text> as JSON text: its encoding changes with element order and makes long keys; key on a scalar column instead
  warning no_regions (regions): no regions: section: the table gets one region and the bulk load goes into it; the guide recommends regions = data size in GB / 8 for a bulk load (regions: {size: 8GiB} computes it from the data size, sampled with --source; or regions: {count: N})

Data rules: not applied: give --source to judge the data as rekey report does (first-column values and skew, incremental key columns, collisions, write hotspots)
`
	if rules != want {
		t.Errorf("design rules:\n%s\nwant:\n%s", rules, want)
	}

	// a timeuuid first column is as monotonic; --regions (even 1, a choice made) answers the regions rule
	mapping = writeFile(t, dir, "byid.yaml", `version: 1
source:
  name: ks.events
  columns: {id: timeuuid, v: text}
target:
  table: events
  primary_key: "[id]"
`)
	out = mustRun(t, "check", "-m", mapping, "--regions", "1")
	if !strings.Contains(out, "warning monotonic_first_key (target.primary_key[0]): the first key column id is a timeuuid (source column id):") || strings.Contains(out, "no_regions") {
		t.Errorf("timeuuid first key, --regions 1:\n%s", out)
	}

	// the hash-prefixed demo mapping follows the rules a mapping shows; without --source check
	// says it judged no data
	out = mustRun(t, "check", "-m", "../../mappings/orders.yaml")
	if !strings.HasSuffix(out, "\nDesign rules: the mapping follows the design rules a mapping alone shows\n\nData rules: not applied: give --source to judge the data as rekey report does (first-column values and skew, incremental key columns, collisions, write hotspots)\n") {
		t.Errorf("orders.yaml:\n%s", out)
	}
}

const keyOnlyMapping = `version: 1
source:
  name: ks.follows
  columns: {user: text, follows: text}
target:
  table: follows
  primary_key: "[md5(user).substr(0,4) + user AS pk][follows]"
  exclude: [user]
regions:
  count: 4
`

// TestCheckKeyOnlyTargetIsError: a target whose every column is in the key cannot hold a row
// (Lindorm cannot write a row that contains only the primary key): check says so and exits 2.
func TestCheckKeyOnlyTargetIsError(t *testing.T) {
	t.Parallel()
	mapping := writeFile(t, t.TempDir(), "follows.yaml", keyOnlyMapping)
	code, out, errs := runCLI(t, "check", "-m", mapping)
	if code != 2 || !strings.Contains(out, "  ERROR key_only_target (target): every target column of table follows is in the primary key") ||
		!strings.Contains(errs, "the target table breaks Lindorm's design rules (key_only_target)") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// TestMigrateRefusesKeyOnlyTarget: migrate refuses a key-only target before reading a row (exit
// 2), says what to add, and leaves no output behind.
func TestMigrateRefusesKeyOnlyTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath := writeFile(t, dir, "follows.csv", "user,follows\nann,bob\n")
	out, code, stdout, stderr := migrateFile(t, dir, keyOnlyMapping, csvPath)
	want := `every target column of table follows is in the primary key: Lindorm "cannot write a row of data that contains only the primary key" (wide-table design guide): add a value column to the mapping: a source column left out of the key, or a constant target.columns entry (present: "1") when the source has no other column`
	if code != 2 || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output created: %v", err)
	}
	// the constant column the message suggests makes the same data loadable
	fixed := strings.Replace(keyOnlyMapping, "  exclude: [user]\n", "  exclude: [user]\n  columns:\n    present: \"1\"\n", 1)
	if _, code, stdout, stderr := migrateFile(t, dir, fixed, csvPath); code != 0 {
		t.Fatalf("with a constant column: exit %d\n%s%s", code, stdout, stderr)
	}
}

// migrateFile runs migrate with the mapping text on a file into dir/out.
func migrateFile(t *testing.T, dir, mappingText, input string) (out string, code int, stdout, stderr string) {
	t.Helper()
	mapping := writeFile(t, dir, "mapping.yaml", mappingText)
	out = filepath.Join(dir, "out")
	code, stdout, stderr = runCLI(t, "migrate", "-m", mapping, "--source", "file:"+input, "--out", out, "--progress", "never")
	return out, code, stdout, stderr
}

const keyValueMapping = `version: 1
source:
  name: ks.t
  columns: {id: bigint, a: text, b: int}
target:
  table: t
  primary_key: "[id]"
regions:
  count: 1
`

// TestMigrateRejectsKeyOnlyRows: a row whose non-key values are all null would store nothing in
// Lindorm: migrate rejects it as key_only_row and counts it.
func TestMigrateRejectsKeyOnlyRows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath := writeFile(t, dir, "t.csv", "id,a,b\n1,x,\n2,,\n3,,5\n")
	out, code, stdout, stderr := migrateFile(t, dir, keyValueMapping, csvPath)
	if code != exitRejects || !strings.Contains(stdout, "    key_only_row  1\n") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	lines := readLines(t, filepath.Join(out, output.RejectsFile))
	var rj output.Reject
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rj) != nil || rj.Code != pipeline.CodeKeyOnlyRow || rj.Raw != "2,," {
		t.Fatalf("rejects %q", lines)
	}
}

// TestReportCountsKeyOnlyRows: report counts the rows migrate would reject as key_only_row in its
// rejects finding.
func TestReportCountsKeyOnlyRows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := writeFile(t, dir, "t.yaml", keyValueMapping)
	csvPath := writeFile(t, dir, "t.csv", "id,a,b\n1,x,\n2,,\n3,,5\n")
	code, stdout, stderr := runCLI(t, "report", "-m", mapping, "--source", "file:"+csvPath)
	if code != 0 || !strings.Contains(stdout, "rejects                   1 of 3 rows (33.3%) would not be migrated: key_only_row 1\n") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
}

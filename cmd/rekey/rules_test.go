package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
)

// TestCheckPrintsDesignRules: check prints, as warnings with exit 0, the design guides' rules a
// mapping breaks: a TIMESTAMP first key column, more than 3 key columns, a collection in the key
// and no regions: section; without a sample it names every data rule it did not examine.
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
  warning key_columns (target.primary_key): 4 key columns: the design guide recommends 1-3 (fewer columns, smaller keys, faster writes)
  warning monotonic_first_key (target.primary_key[0]): the first key column ts is a TIMESTAMP: its values grow with time, so every write goes to the last region (a write hotspot); put a hash prefix first (md5(x).substr(0,4) + x) or a modulo bucket column (x % 16) before it
  warning collection_in_key (target.primary_key[2]): key column tags is the collection set<text> as JSON text: its encoding changes with element order and makes long keys; key on a scalar column instead
  warning no_regions (regions): no regions: section: the table gets one region and the bulk load goes into it; the guide recommends regions = data size in GB / 8 for a bulk load (regions: {size: 8GiB} computes it from the data size, sampled with --source; or regions: {count: N})
` + notExamined("give --source to judge the data as rekey report does")
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
	if !strings.HasSuffix(out, "\nDesign rules: the mapping follows the design rules a mapping alone shows\n"+notExamined("give --source to judge the data as rekey report does")) {
		t.Errorf("orders.yaml:\n%s", out)
	}
}

// notExamined is what check prints of the data rules when it has no sample to judge: every rule
// that could warn, by name, as skipped, then the notes.
func notExamined(why string) string {
	return "\nData rules: not examined (" + why + "):\n" +
		"  skipped rejects, no_rows, few_rows: needs a sample: rows the mapping would reject (no_rows: none judged; few_rows: too few to judge the key's spread)\n" +
		"  skipped key_length: needs a sample: key bytes: over the limit, long p99\n" +
		"  skipped uniqueness: needs a sample: target keys from more than one source row\n" +
		"  skipped first_column_cardinality: needs a sample: distinct values of the first key column vs regions\n" +
		"  skipped first_column_skew: needs a sample: one first-column value holds too many rows\n" +
		"  skipped first_column_prefix: needs a sample: every first-column value shares a prefix\n" +
		"  skipped first_column_monotonic: needs a sample: the first key column grows (or shrinks) in write order\n" +
		"  skipped incremental_key_column, write_order_unknown: needs a sample: incremental key columns, the write order's evidence\n" +
		"  skipped key_json_text: needs a sample: JSON or long text in a key column\n" +
		"  skipped key_column_cardinality, key_column_code, key_column_long, key_column_prefix: needs a sample: the key columns' encodings (long, code, ...)\n" +
		"  skipped region_balance, empty_regions: needs a sample: rows per region, empty regions\n" +
		"  skipped write_hotspot: needs a sample: the busiest region's share of each window of writes\n" +
		"  skipped single_row_hotspot: needs a sample: one key written again and again within a window of writes\n" +
		"  skipped query_access: needs a sample: how the key serves each declared query\n" +
		"  skipped notes (never a warning): duplicates, region_plan, query_index, advisor, sample\n"
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

// typedOrdersCSV writes orders whose first key column is an order type (60% NORMAL) and whose
// ids rise with the time they were placed.
func typedOrdersCSV(t *testing.T, dir string, rows int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("order_type,orderid,userid,ts,amount\n")
	types := []string{"NORMAL", "NORMAL", "NORMAL", "NORMAL", "NORMAL", "NORMAL", "GROUP", "GROUP", "PRESALE", "REFUND"}
	for i := 0; i < rows; i++ {
		fmt.Fprintf(&b, "%s,ord%010d,u%06d,%d,8.00\n", types[(i*7919)%10], i, (i*104729)%5000, 1704067200000+int64(i))
	}
	return writeFile(t, dir, "typed.csv", b.String())
}

const typedOrdersMapping = `version: 1
source:
  name: shop.typed_orders
  columns: {order_type: text, orderid: text, userid: text, ts: timestamp, amount: decimal}
target:
  table: typed_orders
  primary_key: "[order_type][orderid][random(4) AS salt]"
regions:
  count: 16
`

// TestCheckSourceAppliesDataRules: check --source judges a sample of the data with report's
// rules: an enumerated, skewed first column and an id rising behind it, which the mapping alone
// cannot show; it says it planned fewer regions than asked, and names the trailing salt's cost.
func TestCheckSourceAppliesDataRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := writeFile(t, dir, "typed.yaml", typedOrdersMapping)
	csvPath := typedOrdersCSV(t, dir, 20000)
	out := mustRun(t, "check", "-m", mapping, "--source", "file:"+csvPath)
	for _, want := range []string{
		"Region plan: 4 regions on order_type (VARCHAR), strategy quantile\n  16 regions asked for, 4 planned:",
		"  warning trailing_salt (target.primary_key[2]): key column salt is a salt behind order_type: it spreads nothing",
		"  warning salted_key (target.primary_key[2]): the key has a salt (random(4)): reads: a GET of one row becomes 4 lookups",
		"rekey replicate rejects deletes",
		"\nData rules on a sample of 20,000 source rows (rekey report's rules;",
		"  warning first_column_cardinality: first key column order_type has only 4 distinct values",
		`  warning first_column_skew: skewed first column: order_type = "NORMAL" holds 60.0% of the rows`,
		`the primary-key guide: "Do not specify a column that contains enumerated data, such as order types`,
		"  warning incremental_key_column: key column orderid is incremental",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "follows Lindorm's design guides") {
		t.Errorf("check certifies the mapping:\n%s", out)
	}

	// colliding keys in the sample are an error, as in report
	collide := writeFile(t, dir, "collide.yaml", strings.Replace(typedOrdersMapping, "[order_type][orderid][random(4) AS salt]", "[md5(userid).substr(0,4) + userid AS pk]", 1))
	code, out, errs := runCLI(t, "check", "-m", collide, "--source", "file:"+csvPath)
	if code != 2 || !strings.Contains(out, "  ERROR uniqueness: ") || !strings.Contains(errs, "the target table breaks Lindorm's design rules (uniqueness)") {
		t.Errorf("colliding keys: exit %d\n%s%s", code, out, errs)
	}
}

// TestCheckPrintsRulesWhenThePlanFails: a quantile plan without --source cannot be made; check
// still prints the mapping's design rules, says it judged no data, and exits 2 with the reason.
func TestCheckPrintsRulesWhenThePlanFails(t *testing.T) {
	t.Parallel()
	mapping := writeFile(t, t.TempDir(), "typed.yaml", typedOrdersMapping)
	code, out, errs := runCLI(t, "check", "-m", mapping)
	for _, want := range []string{
		"\nRegion plan: not computed: region plan: regions: 16 regions on the first key column \"order_type\" need a sample of the source",
		"  warning trailing_salt (target.primary_key[2]):",
		notExamined("the region plan failed (above)"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if code != 2 || !strings.Contains(errs, "need a sample of the source to place quantile split keys") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// TestReportRefusesKeyOnlyTarget: report gives the key-only target the error check and migrate
// give it (exit 2), and proposes no design Lindorm could not write.
func TestReportRefusesKeyOnlyTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := writeFile(t, dir, "follows.yaml", keyOnlyMapping)
	csvPath := writeFile(t, dir, "follows.csv", "user,follows\nann,bob\nbob,cid\ncid,ann\n")
	jsonPath := filepath.Join(dir, "r.json")
	code, out, errs := runCLI(t, "report", "-m", mapping, "--source", "file:"+csvPath, "--json", jsonPath)
	if code != 2 || !strings.Contains(out, "ERROR  key_only_target") || !strings.Contains(errs, "the report found errors") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var rep struct {
		Alternatives []struct {
			PrimaryKey string `json:"primary_key"`
			IsMapping  bool   `json:"is_mapping"`
			Rank       int
			Error      string
		}
	}
	if b, err := os.ReadFile(jsonPath); err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Alternatives) == 0 {
		t.Fatalf("%v", err)
	}
	for _, a := range rep.Alternatives {
		switch {
		case a.IsMapping && !strings.HasPrefix(a.Error, "key-only: "):
			t.Errorf("the mapping's design: %+v", a)
		case a.Rank == 1 && a.Error != "":
			t.Errorf("the first design cannot be built: %+v", a)
		}
	}
}

// TestReportWorkloadFlag: --workload takes reads_first or write_heavy and refuses anything else.
func TestReportWorkloadFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := writeFile(t, dir, "t.yaml", keyValueMapping)
	csvPath := writeFile(t, dir, "t.csv", "id,a,b\n1,x,2\n")
	code, _, errs := runCLI(t, "report", "-m", mapping, "--source", "file:"+csvPath, "--workload", "writes")
	if code != 2 || !strings.Contains(errs, `--workload: want reads_first`) {
		t.Errorf("--workload writes: exit %d: %s", code, errs)
	}
	if code, out, errs := runCLI(t, "report", "-m", mapping, "--source", "file:"+csvPath, "--workload", "write_heavy", "--json", filepath.Join(dir, "r.json")); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var rep struct{ Workload string }
	if b, err := os.ReadFile(filepath.Join(dir, "r.json")); err != nil || json.Unmarshal(b, &rep) != nil || rep.Workload != "write_heavy" {
		t.Errorf("workload %q (%v)", rep.Workload, err)
	}
}

// TestCheckGuideTables runs check --source on the design guides' example tables (docs/examples,
// mappings/logs.yaml; the data from gen:) and pins every rule it reports: each anti-pattern the
// guides name is flagged (a newest-first query on a key that does not store its range DESC
// too), and the guides' own designs get none.
func TestCheckGuideTables(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mapping, source string
		want            []string
	}{
		{"docs/examples/channel_orders.yaml", "gen:orders?rows=100000", []string{"first_column_cardinality", "first_column_skew", "incremental_key_column", "region_balance", "write_hotspot"}},
		// its newest-first query reads a key stored ascending: the guide's [userid][orderid DESC]
		{"docs/examples/user_orders.yaml", "gen:orders?rows=100000", []string{"query_access"}},
		{"docs/examples/salted_orders.yaml", "gen:orders?rows=100000", []string{"trailing_salt", "salted_key"}},
		{"docs/examples/status_orders.yaml", "gen:orders?rows=100000", []string{"first_column_cardinality", "first_column_skew", "incremental_key_column", "query_access"}},
		{"docs/examples/orders_by_id.yaml", "gen:orders?rows=100000", []string{"query_access"}},
		{"mappings/orders.yaml", "gen:orders?rows=100000", nil},
		{"mappings/logs.yaml", "gen:logs?rows=100000", []string{"key_columns", "uniqueness"}}, // the generated logs repeat a few (ts, host, event)
	}
	for _, c := range cases {
		code, out, errs := runCLI(t, "check", "-m", "../../"+c.mapping, "--source", c.source)
		var got []string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 2 && (f[0] == "warning" || f[0] == "ERROR") && strings.HasPrefix(l, "  ") {
				got = append(got, strings.TrimSuffix(f[1], ":"))
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: rules %v, want %v\n%s", c.mapping, got, c.want, out)
		}
		wantCode := 0
		if slices.Contains(c.want, "uniqueness") {
			wantCode = 2
		}
		if code != wantCode || len(c.want) == 0 && !strings.Contains(out, "the data follows Lindorm's design guides") {
			t.Errorf("%s: exit %d\n%s%s", c.mapping, code, out, errs)
		}
	}
}

// TestCheckSourceSaysTheWriteOrderIsUnknown: with nothing to tell the order the application
// creates rows in (no time column, no write_order), check judges monotonicity and hotspots in
// the order it read the rows; it says so rather than that the data follows the guides. Here
// the ids rise with time but the file holds them shuffled, as a Cassandra token scan would.
func TestCheckSourceSaysTheWriteOrderIsUnknown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := writeFile(t, dir, "byid.yaml", `version: 1
source:
  name: ks.orders
  columns: {id: bigint, v: text}
target:
  table: orders
  primary_key: "[id]"
regions:
  count: 16
`)
	var b strings.Builder
	b.WriteString("id,v\n")
	for i := 0; i < 5000; i++ {
		k := (i * 2399) % 5000 // a shuffle: every k once
		fmt.Fprintf(&b, "%d,x\n", (1700000000000+int64(k)*37)<<22|int64(k%4096))
	}
	csvPath := writeFile(t, dir, "orders.csv", b.String())
	out := mustRun(t, "check", "-m", mapping, "--source", "file:"+csvPath)
	if strings.Contains(out, "follows Lindorm's design guides") || !strings.Contains(out, "  note write_order_unknown: the order the application creates rows in is unknown") {
		t.Errorf("check passes the data with the write order unknown:\n%s", out)
	}
	// check has no --write-order flag: its advice is the mapping's source.write_order
	if strings.Contains(out, "or pass --write-order COLUMN") {
		t.Errorf("check tells its user to pass --write-order, a flag of report only:\n%s", out)
	}
}

// TestCheckSourceSaysTheDeclaredWriteOrderGaveWay: the mapping declares created as the row's
// creation time, but the data leaves it empty; check judges the rules in another order (here
// the inferred column ts) and must say so, as report's header does, rather than pass the data
// as judged in the order the mapping declared.
func TestCheckSourceSaysTheDeclaredWriteOrderGaveWay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := writeFile(t, dir, "users.yaml", `version: 1
source:
  name: ks.users
  write_order: created
  columns: {userid: text, created: timestamp, ts: timestamp, v: text}
target:
  table: users
  primary_key: "[md5(userid).substr(0,4) + userid AS pk]"
regions:
  count: 16
`)
	var b strings.Builder
	b.WriteString("userid,created,ts,v\n")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "u%d,,%d,x\n", i, 1700000000000+int64(i)*1000)
	}
	csvPath := writeFile(t, dir, "users.csv", b.String())
	out := mustRun(t, "check", "-m", mapping, "--source", "file:"+csvPath)
	if strings.Contains(out, "follows Lindorm's design guides") || !strings.Contains(out, "column created, declared the row's creation time by source.write_order gives no order here") {
		t.Errorf("check does not say the declared write order gave way:\n%s", out)
	}
}

// TestCheckSourceTooSmallToJudgeSaysSo: a source too small for the hotspot rules (200 rows: one
// window of writes, windows of 4 writes for hot rows) leaves them not judged; check names them
// rather than saying the data follows the guides. Before, a hash-prefix key over 200 rows read
// "the data follows Lindorm's design guides".
func TestCheckSourceTooSmallToJudgeSaysSo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := writeFile(t, dir, "byhash.yaml", `version: 1
source:
  name: ks.orders
  columns: {id: bigint, ts: timestamp, v: text}
target:
  table: orders
  primary_key: "[md5(id).substr(0,4) + id AS h]"
regions:
  count: 4
`)
	var b strings.Builder
	b.WriteString("id,ts,v\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "%d,%d,x\n", (int64(i)*7919)%1000003, 1700000000000+int64(i)*1000)
	}
	csvPath := writeFile(t, dir, "orders.csv", b.String())
	out := mustRun(t, "check", "-m", mapping, "--source", "file:"+csvPath)
	if strings.Contains(out, "follows Lindorm's design guides") || !strings.Contains(out, "  not judged write_hotspot: ") {
		t.Errorf("check passes a sample too small for the hotspot rules:\n%s", out)
	}
}

// TestReplicateRefusesKeyOnlyTarget: replicate refuses a key-only target as migrate does, before
// it reaches a broker or makes the output folder (exit 2). Before, it went on to replicate into a
// table whose rows Lindorm cannot store: every change failed, or made files bulkload cannot load.
func TestReplicateRefusesKeyOnlyTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := writeFile(t, dir, "follows.yaml", keyOnlyMapping)
	out := filepath.Join(dir, "live")
	code, stdout, stderr := runCLI(t, "replicate", "-m", mapping, "--source", "kafka://127.0.0.1:1/follows?group=g", "--out", out, "--progress", "never")
	if code != 2 || !strings.Contains(stderr, "every target column of table follows is in the primary key") || !strings.Contains(stderr, "add a value column to the mapping") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output created: %v", err)
	}
}

// TestDDLRefusesKeyOnlyTarget: ddl refuses a key-only target as check does (exit 2, nothing on
// stdout). Before, it printed a CREATE TABLE and exited 0: the table could be created, and then
// migrate refused to fill it.
func TestDDLRefusesKeyOnlyTarget(t *testing.T) {
	t.Parallel()
	mapping := writeFile(t, t.TempDir(), "follows.yaml", keyOnlyMapping)
	// split keys from a sample of the source: refused before the source is opened
	quantile := writeFile(t, t.TempDir(), "byfollows.yaml", strings.Replace(strings.Replace(keyOnlyMapping,
		`"[md5(user).substr(0,4) + user AS pk][follows]"`, `"[follows][user]"`, 1), "  exclude: [user]\n", "", 1))
	for _, args := range [][]string{{"-m", mapping, "--dialect", "lindorm"}, {"-m", mapping, "--dialect", "mariadb"},
		{"-m", quantile, "--source", "file:" + filepath.Join(t.TempDir(), "none.csv")}} {
		code, stdout, stderr := runCLI(t, append([]string{"ddl"}, args...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "every target column of table follows is in the primary key") {
			t.Errorf("%s: exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
}

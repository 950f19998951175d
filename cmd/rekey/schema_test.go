package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
)

// TestJSONSchemas validates real `report --json` and `verify --json` output, and an output's
// manifest.json and checkpoint.json, against the schemas
// published in docs/schema, so a field added, renamed or retyped shows up there.
func TestJSONSchemas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	mustRun(t, "gen", "orders", "--rows", "20000", "--out", filepath.Join(dir, "orders.csv"))
	src := "file:" + filepath.Join(dir, "orders.csv")
	reports := map[string][]string{ // file -> args; logs_by_time's key has errors, the advisor and a heatmap
		"orders.json": {"report", "-m", "../../mappings/orders.yaml", "--source", src, "--query", "userid=, orderid range, newest_first", "--progress", "never"},
		"logs.json":   {"report", "-m", "../../report/testdata/logs_by_time.yaml", "--source", "gen:logs?rows=20000", "--nodes", "4", "--progress", "never"},
	}
	for name, args := range reports {
		path := filepath.Join(dir, name)
		if code, stdout, stderr := runCLI(t, append(args, "--json", path)...); code != 0 && code != 2 {
			t.Fatalf("rekey report: exit %d\n%s%s", code, stdout, stderr)
		}
		checkSchema(t, "../../docs/schema/report.v1.json", path)
	}

	mustRun(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", src, "--out", out, "--progress", "never")
	checkSchema(t, "../../docs/schema/manifest.json", filepath.Join(out, output.ManifestFile))
	checkSchema(t, "../../docs/schema/checkpoint.json", filepath.Join(out, output.CheckpointFile))
	equal := filepath.Join(dir, "equal.json")
	mustRun(t, "verify", "-m", "../../mappings/orders.yaml", "--source", src, "--target", out, "--json", equal, "--progress", "never")
	checkSchema(t, "../../docs/schema/verify.json", equal)

	// a different target: a copied data file (unlisted, extra rows) and a source with rows more
	files, _ := filepath.Glob(filepath.Join(out, "data", "region-0003", "*.parquet"))
	if len(files) == 0 {
		t.Fatal("no data file in region-0003")
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "data", "region-0003", "copy.parquet"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	differ := filepath.Join(dir, "differ.json")
	code, stdout, stderr := runCLI(t, "verify", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=20100", "--target", out,
		"--json", differ, "--repair", filepath.Join(dir, "repair.jsonl"), "--progress", "never")
	if code != 2 {
		t.Fatalf("rekey verify of a different target: exit %d, want 2\n%s%s", code, stdout, stderr)
	}
	checkSchema(t, "../../docs/schema/verify.json", differ)
}

// A report in arrival order (no time column, no declared write order) has no time heatmap:
// its --json holds "time_heatmap": null, as report/README.md says, and the published schema
// takes it. Before, the schema allowed only an object, so the report of most CSV exports failed
// validation against it; so did a report of a source that gave no rows or had every row rejected.
func TestReportJSONSchemaArrivalOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mapping := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(mapping, []byte("version: 1\nsource:\n  name: ks.t\n  columns:\n    id: text\n    v: text\ntarget:\n  table: t\n  primary_key: \"[id]\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var rows strings.Builder
	rows.WriteString("id,v\n")
	for i := range 300 {
		fmt.Fprintf(&rows, "k%03d,%d\n", i*7%300, i)
	}
	for name, data := range map[string]string{"rows.csv": rows.String(), "empty.csv": "id,v\n", "rejected.csv": "id,v\n\"\xff\",1\n"} {
		csv := filepath.Join(dir, name)
		if err := os.WriteFile(csv, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name+".json")
		if code, stdout, stderr := runCLI(t, "report", "-m", mapping, "--source", "file:"+csv, "--json", path, "--progress", "never"); code != 0 && code != 2 {
			t.Fatalf("rekey report of %s: exit %d\n%s%s", name, code, stdout, stderr)
		}
		checkSchema(t, "../../docs/schema/report.v1.json", path)
	}
}

func checkSchema(t *testing.T, schemaPath, docPath string) {
	t.Helper()
	var schema, doc any
	for path, v := range map[string]*any{schemaPath: &schema, docPath: &doc} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	for _, problem := range validateJSON(schema.(map[string]any), doc, "$") {
		t.Errorf("%s against %s: %s", filepath.Base(docPath), filepath.Base(schemaPath), problem)
	}
}

// validateJSON checks v against the subset of JSON Schema the files in docs/schema use: type
// (one or a list), const, enum, properties, required, additionalProperties (false or a schema)
// and items. It returns every problem, each with its JSON path.
func validateJSON(schema map[string]any, v any, path string) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, path+": "+fmt.Sprintf(format, args...)) }
	if want, ok := schema["type"]; ok {
		types, _ := want.([]any)
		if s, ok := want.(string); ok {
			types = []any{s}
		}
		matched := false
		for _, typ := range types {
			matched = matched || jsonTypeIs(typ.(string), v)
		}
		if !matched {
			bad("%s, want %v", jsonTypeName(v), want)
			return problems
		}
	}
	if c, ok := schema["const"]; ok && !reflect.DeepEqual(c, v) {
		bad("%v, want %v", v, c)
	}
	if enum, ok := schema["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || reflect.DeepEqual(e, v)
		}
		if !found {
			bad("%v, want one of %v", v, enum)
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := schema["properties"].(map[string]any)
		required, _ := schema["required"].([]any)
		for _, name := range required {
			if _, ok := obj[name.(string)]; !ok {
				bad("required field %q is missing", name)
			}
		}
		names := make([]string, 0, len(obj))
		for name := range obj {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			sub, ok := props[name].(map[string]any)
			if !ok {
				switch extra := schema["additionalProperties"].(type) {
				case bool:
					if !extra {
						bad("field %q is not in the schema", name)
					}
					continue
				case map[string]any:
					sub = extra
				default:
					continue
				}
			}
			problems = append(problems, validateJSON(sub, obj[name], path+"."+name)...)
		}
	}
	if arr, ok := v.([]any); ok {
		if items, ok := schema["items"].(map[string]any); ok {
			for i, e := range arr {
				problems = append(problems, validateJSON(items, e, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return problems
}

func jsonTypeIs(typ string, v any) bool {
	if typ == "integer" {
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	}
	return jsonTypeName(v) == typ
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

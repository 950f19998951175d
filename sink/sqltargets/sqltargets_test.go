package sqltargets

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// Every registered SQL target is whole: the scheme, password variable, port and --help entry a
// URI needs, the statement words and procedures sqlsink asks it for, a CREATE TABLE for ddl;
// schemes and ddl names are unique, and each is found by them.
func TestEveryTargetIsWhole(t *testing.T) {
	ddlNames := map[string]bool{}
	for _, d := range All() {
		if d.Name == "" || Get(d.Name) != d {
			t.Errorf("%q: not found by its scheme", d.Name)
		}
		if d.Title == "" || !strings.HasPrefix(d.PasswordEnv, "REKEY_") || d.DefaultPort <= 0 {
			t.Errorf("%s: title %q, password variable %q, port %d", d.Name, d.Title, d.PasswordEnv, d.DefaultPort)
		}
		if !strings.HasPrefix(d.URIHelp, "  "+d.Name+"://") || !strings.Contains(d.URIHelp, d.PasswordEnv) {
			t.Errorf("%s: --help entry %q names neither its scheme first nor its password variable", d.Name, d.URIHelp)
		}
		if d.UpsertVerb == "" || d.Quote == nil || d.Describe == nil || d.TypeMismatch == nil || d.DDLHelp == "" {
			t.Errorf("%s: an upsert verb, quoting, Describe, TypeMismatch and DDLHelp are needed", d.Name)
		}
		if len(d.DDL) == 0 {
			t.Errorf("%s: no CREATE TABLE for rekey ddl", d.Name)
		}
		for _, ddl := range d.DDL {
			if ddl.Name == "" || ddl.Words == "" || ddl.Create == nil || ddlNames[ddl.Name] {
				t.Errorf("%s: ddl %+v: a unique name, its words and Create are needed", d.Name, ddl)
			}
			ddlNames[ddl.Name] = true
			if got, ok := DDL(ddl.Name); !ok || got.Name != ddl.Name {
				t.Errorf("DDL(%q) = %+v, %v", ddl.Name, got, ok)
			}
		}
	}
	if Get("postgres") != nil {
		t.Error("Get(postgres): a target rekey is not built with")
	}
	if _, ok := DDL("postgres"); ok {
		t.Error("DDL(postgres): a server rekey prints no table for")
	}
}

// The lists --help and errors print are the registry's, in its order, so that a new target is
// in every one of them (docs/cli, checked against --help, holds their text).
func TestListsFollowTheRegistry(t *testing.T) {
	var schemes, servers, words, helps []string
	for _, d := range All() {
		schemes = append(schemes, d.Name+"://")
		helps = append(helps, d.DDLHelp)
		for _, ddl := range d.DDL {
			servers, words = append(servers, ddl.Name), append(words, ddl.Words)
		}
		if !strings.Contains(DDLDocs(), d.DDLDoc) {
			t.Errorf("%s: its ddl paragraph is not in DDLDocs()", d.Name)
		}
	}
	if got, want := strings.Join(Schemes(), " "), strings.Join(schemes, " "); got != want {
		t.Errorf("Schemes() = %q, want %q", got, want)
	}
	if got, want := strings.Join(DDLServers(), " "), strings.Join(servers, " "); got != want || DDLServers()[0] != "lindorm" {
		t.Errorf("DDLServers() = %q, want %q, Lindorm's first (ddl's default)", got, want)
	}
	if got, want := DDLNames(), Join(words, "or"); got != want {
		t.Errorf("DDLNames() = %q, want %q", got, want)
	}
	if got, want := DDLHelp(), strings.Join(helps, ", or "); got != want {
		t.Errorf("DDLHelp() = %q, want %q", got, want)
	}
	if got, want := Join([]string{"a", "b", "c"}, "or"), "a, b or c"; got != want {
		t.Errorf("Join = %q, want %q", got, want)
	}
}

// ddl --dialect's servers print their own tables: Lindorm's split by the plan, MySQL's and
// MariaDB's with their own key collations.
func TestDDLByServer(t *testing.T) {
	s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "v", Type: pipeline.TypeBigint, KeyPos: -1}}}
	for name, want := range map[string]string{
		"lindorm": "CREATE TABLE IF NOT EXISTS t (\n  k VARCHAR NOT NULL,\n  v BIGINT,\n  PRIMARY KEY(k)\n)",
		"mysql":   "COLLATE utf8mb4_0900_bin NOT NULL",
		"mariadb": "COLLATE utf8mb4_nopad_bin NOT NULL",
	} {
		ddl, _ := DDL(name)
		got, err := ddl.Create(s, pipeline.RegionPlan{}, nil)
		if err != nil || !strings.Contains(got, want) || !strings.HasSuffix(got, "\n") {
			t.Errorf("%s: %q, %v; want it to hold %q", name, got, err, want)
		}
	}
}

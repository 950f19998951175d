// Package sqltargets is the set of SQL targets rekey is built with, each a folder holding its
// sqldialect.Dialect: URIs pick one by scheme (sqlsink.ParseURI), `rekey ddl --dialect` by the
// servers it prints tables for, and --help lists them. A new SQL target is its folder under
// sink/sqlsink and one line here.
package sqltargets

import (
	"strings"

	"github.com/rekey/rekey/sink/sqlsink/lindormsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/sqldialect"
)

// all is every SQL target, in the order help and errors list them.
var all = []*sqldialect.Dialect{
	lindormsql.Dialect,
	mysqlsql.Dialect,
}

// All lists the SQL targets.
func All() []*sqldialect.Dialect { return append([]*sqldialect.Dialect(nil), all...) }

// Get is the target of a URI scheme ("lindorm"), nil when none.
func Get(scheme string) *sqldialect.Dialect {
	for _, d := range all {
		if d.Name == scheme {
			return d
		}
	}
	return nil
}

// Schemes lists the targets' URI schemes ("lindorm://", "mysql://").
func Schemes() []string {
	s := make([]string, len(all))
	for i, d := range all {
		s[i] = d.Name + "://"
	}
	return s
}

// DDL is the CREATE TABLE `rekey ddl --dialect name` prints; false when no target has it.
func DDL(name string) (sqldialect.DDL, bool) {
	for _, d := range all {
		for _, t := range d.DDL {
			if t.Name == name {
				return t, true
			}
		}
	}
	return sqldialect.DDL{}, false
}

// DDLServers lists --dialect's values in the registry's order; the first is its default.
func DDLServers() []string {
	var names []string
	for _, d := range all {
		for _, t := range d.DDL {
			names = append(names, t.Name)
		}
	}
	return names
}

// DDLNames lists --dialect's values as a sentence does: "lindorm, mysql (MySQL 8) or mariadb".
func DDLNames() string {
	var words []string
	for _, d := range all {
		for _, t := range d.DDL {
			words = append(words, t.Words)
		}
	}
	return Join(words, "or")
}

// DDLHelp is --dialect's usage: "lindorm, or mysql (MySQL 8) or mariadb for ...".
func DDLHelp() string {
	words := make([]string, len(all))
	for i, d := range all {
		words[i] = d.DDLHelp
	}
	return strings.Join(words, ", or ")
}

// DDLDocs are the targets' paragraphs of ddl's --help, each after a blank line.
func DDLDocs() string {
	var b strings.Builder
	for _, d := range all {
		if d.DDLDoc != "" {
			b.WriteString("\n\n" + d.DDLDoc)
		}
	}
	return b.String()
}

// Join joins words as a sentence does with conj: "a, b or c".
func Join(words []string, conj string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}

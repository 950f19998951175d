package main

import (
	"strings"
	"testing"
)

// A DECIMAL key column holds every value at its scale: 1.5 and 1.50 (2 and 2.0) are one key in
// the table, so report counts them as colliding. Before, it hashed the text as written and said
// "no collisions: 6 distinct keys" of rows the bulk load overwrites.
func TestReportDecimalKeySpelledTwoWaysCollides(t *testing.T) {
	dir := t.TempDir()
	csv := writeFile(t, dir, "d.csv", "id,amount\n1,1.5\n2,1.50\n3,2\n4,2.0\n5,1.05\n6,20\n")
	mapping := writeFile(t, dir, "d.yaml", `version: 1
source:
  name: t
  columns: {id: bigint, amount: decimal}
target:
  table: t
  primary_key: "[amount :: DECIMAL(10,2) AS amt]"
`)
	_, out, errs := runCLI(t, "report", "-m", mapping, "--source", "file:"+csv)
	if !strings.Contains(out+errs, "UNIQUENESS  4 distinct keys, 2 colliding keys, 2 rows overwritten") {
		t.Errorf("report of one number spelled two ways:\n%s%s", out, errs)
	}
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCDCRangeDeletesInEitherClusteringOrder: range deletes of real tables whose clustering order
// and target key order a clustering column differently (a table clustered b ASC into a key
// [a][b DESC][c], the guides' newest first; a table clustered b DESC into [a][b][c]), replicated
// from Debezium's Cassandra connector into a SQL table. The connector gives a range's bounds in
// the table's clustering order; read in the key's order they deleted the rows on the other side
// of the bound and kept the range's. verify against Cassandra itself says EQUAL.
func TestCDCRangeDeletesInEitherClusteringOrder(t *testing.T) {
	cas, kc := realConnector(t)
	ks, exec := connectorKeyspace(t, cas, "rng")
	srv, conns := sqlServer(t)
	for _, tb := range []struct{ name, clustering, key string }{
		{"ev_asc", "", "[a][b DESC][c]"},
		{"ev_desc", " WITH CLUSTERING ORDER BY (b DESC, c ASC)", "[a][b][c]"},
	} {
		t.Run(tb.name, func(t *testing.T) {
			connectorTable(t, exec, ks, tb.name, `(a int, b int, c int, x text, PRIMARY KEY ((a), b, c))`+tb.clustering)
			topic := os.Getenv(debeziumPrefixEnv) + "." + ks + "." + tb.name
			dir := t.TempDir()
			mapping := writeFile(t, dir, tb.name+".yaml", fmt.Sprintf(`version: 1
source:
  name: %s.%s
  columns: {a: int, b: int, c: int, x: text}
target:
  table: %s
  primary_key: "%s"
`, ks, tb.name, tb.name, tb.key))
			srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))

			// rows b 0..9, c 0..1 in partitions 1 to 5, then one kind of range delete in each
			mutations := 0
			for a := 1; a <= 5; a++ {
				for b := range 10 {
					for c := range 2 {
						exec(`INSERT INTO `+ks+`.`+tb.name+` (a, b, c, x) VALUES (?, ?, ?, 'v')`, a, b, c)
						mutations++
					}
				}
			}
			for _, del := range []string{
				`a = 1 AND b >= 7`,
				`a = 2 AND b < 3`,
				`a = 3 AND b > 2 AND b <= 5`,
				`a = 4 AND b = 6 AND c >= 1`,
				`a = 5 AND b = 4`,
			} {
				exec(`DELETE FROM ` + ks + `.` + tb.name + ` WHERE ` + del)
				mutations++
			}
			end := waitForMutations(t, kc, topic, mutations)

			group := kc.Group("range-" + tb.name)
			startReplication(t, kc, topic, group, "replicate", "-m", mapping,
				"--source", "kafka://"+strings.Join(kc.Brokers, ",")+"/"+topic+"?group="+group+"&format=debezium",
				"--out", srv.URI(""), "--sql-conns", conns, "--state", filepath.Join(dir, "state"), "--progress", "never")(end)

			code, out, errs := runCLI(t, "verify", "-m", mapping, "--source", cas.URI(ks, tb.name, ""), "--target", srv.URI(""), "--progress", "never")
			if code != 0 || !strings.Contains(out+errs, "EQUAL") {
				t.Fatalf("verify against Cassandra: exit %d\n%s%s\nthe table: %s", code, out, errs,
					strings.Join(dumpTable(t, srv.DB(t), "SELECT a, b, c FROM "+tb.name+" ORDER BY a, b, c"), " "))
			}
			// 100 rows less 6 + 6 + 6 + 1 + 2 deleted
			if got := dumpTable(t, srv.DB(t), "SELECT a, b, c FROM "+tb.name); len(got) != 79 {
				t.Errorf("the table holds %d rows, want 79", len(got))
			}
		})
	}
}

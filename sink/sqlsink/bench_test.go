package sqlsink

import (
	"context"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
)

// BenchmarkWriteMariaDB writes batches of 2,000 rows of every type (a text column with a quote,
// a backslash and a newline) into MariaDB over 4 connections: the sink's throughput, rows/s.
func BenchmarkWriteMariaDB(b *testing.B) {
	if !mysqltest.MariaDBAvailable() {
		b.Skip("needs MariaDB")
	}
	srv := mysqltest.MariaDB(b)
	srv.Exec(b, mysqlsql.DDL(testSchema(), mysqlsql.KeyCollations[srv.DDLDialect()]))
	tgt, err := ParseURI(srv.URI(""), noEnv)
	if err != nil {
		b.Fatal(err)
	}
	w, err := Open(context.Background(), Config{Target: tgt, Schema: testSchema(), Conns: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	rows := make([]pipeline.Row, DefaultMaxRows)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for n := 0; n < b.N; n++ {
		for i := range rows {
			rows[i] = pipeline.Row{Values: testRow(n*len(rows) + i)}
		}
		if err := w.Write(context.Background(), rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(rows))/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkScanMariaDB reads a table of 20,000 rows of every type whole, page by page (what
// verify does with a table that holds the source's keys): the client's cost per row, rows/s.
func BenchmarkScanMariaDB(b *testing.B) {
	if !mysqltest.MariaDBAvailable() {
		b.Skip("needs MariaDB")
	}
	srv := mysqltest.MariaDB(b)
	schema := testSchema()
	srv.Exec(b, mysqlsql.DDL(schema, mysqlsql.KeyCollations[srv.DDLDialect()]))
	const n = 20_000
	rows := make([]pipeline.Row, n)
	for i := range rows {
		rows[i] = pipeline.Row{Values: testRow(i)}
	}
	l := lookupOf(b, srv, schema, rows)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		read := 0
		if err := l.Scan(context.Background(), pipeline.KeyRange{}, func([]pipeline.Value) error { read++; return nil }); err != nil || read != n {
			b.Fatalf("%d rows read: %v", read, err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
}

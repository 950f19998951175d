package cassandra_test

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
	"github.com/rekey/rekey/source/sourcetest"
)

// A token-range scan over the CQL test server (ranges read in parallel, pages as batches) resumes
// after any batch from the paging states the checkpoint would hold, without losing or repeating a
// row; its Identity names the table, so another table's is another.
func TestSourceConformance(t *testing.T) {
	c := cassandratest.Open(t, cqltest.WithNodes(2))
	must(t, cassandratest.SeedOrders(c, 400))
	must(t, c.CreateTable("other", "orders", cassandratest.OrdersColumns, []string{"userid"}, []string{"orderid"}))
	const params = "page_size=40&splits=6&workers=3"
	sourcetest.Run(t, sourcetest.Case{
		Open:        func(t *testing.T) pipeline.Source { return open(t, c, "shop", "orders", params) },
		OpenChanged: func(t *testing.T) pipeline.Source { return open(t, c, "other", "orders", params) },
	})
}

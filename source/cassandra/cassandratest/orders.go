package cassandratest

import (
	"strconv"
	"time"

	"gopkg.in/inf.v0"

	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// Seeder is what SeedOrders writes through: a Cluster, or a cqltest.Server directly.
type Seeder interface {
	CreateTable(keyspace, name string, cols []cqltest.Column, partitionKey, clustering []string) error
	InsertMany(keyspace, name string, n int, fill func(i int, row map[string]any) error) error
}

// OrdersColumns are the columns of shop.orders, the table of mappings/orders.yaml.
var OrdersColumns = []cqltest.Column{
	{Name: "userid", Type: "text"}, {Name: "orderid", Type: "bigint"}, {Name: "channel", Type: "text"},
	{Name: "ts", Type: "timestamp"}, {Name: "status", Type: "text"}, {Name: "location", Type: "text"},
	{Name: "amount", Type: "decimal"},
}

// OrdersScan is the SELECT of every column of shop.orders over one token range.
const OrdersScan = `SELECT userid, orderid, channel, ts, status, location, amount FROM shop.orders WHERE token(userid) > ? AND token(userid) <= ?`

// SeedOrders creates shop.orders (PRIMARY KEY ((userid), orderid)) and inserts n rows: four
// orders per user, monotonic order ids and timestamps, a handful of channels, statuses and
// cities, amounts with two decimals. The benchmarks read it.
func SeedOrders(s Seeder, n int) error {
	if err := s.CreateTable("shop", "orders", OrdersColumns, []string{"userid"}, []string{"orderid"}); err != nil {
		return err
	}
	channels := []string{"taobao", "alipay", "wechat", "jd", "pdd", "web"}
	statuses := []string{"created", "paid", "shipped", "delivered", "refunded"}
	locations := []string{"Hangzhou", "Shanghai", "Beijing", "Shenzhen", "Chengdu", "Wuhan", "Xi'an"}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	decs := make([]*inf.Dec, 1000)
	for i := range decs {
		decs[i] = inf.NewDec(int64(i*97+1), 2)
	}
	return s.InsertMany("shop", "orders", n, func(i int, r map[string]any) error {
		r["userid"] = "user" + strconv.Itoa(i/4)
		r["orderid"] = int64(i)
		r["channel"] = channels[i%len(channels)]
		r["ts"] = base + int64(i)*1000
		r["status"] = statuses[i%len(statuses)]
		r["location"] = locations[i%len(locations)]
		r["amount"] = decs[i%len(decs)]
		return nil
	})
}

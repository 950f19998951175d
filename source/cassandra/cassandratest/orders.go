package cassandratest

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"
	"gopkg.in/inf.v0"

	"github.com/rekey/rekey/source/cassandra"
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

// BareScan reads shop.orders over ranges with gocql alone, workers ranges at a time (auto-paging
// with prefetch), scanning every column into Go values and nothing else: the ceiling a client
// can read at. It returns the rows read.
func BareScan(hosts []string, ranges []cassandra.Range, workers, pageSize int) (int64, error) {
	cl := gocql.NewCluster(hosts...)
	cl.ProtoVersion = 4
	cl.Timeout = 30 * time.Second
	cl.Consistency = gocql.LocalOne
	cl.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	sess, err := cl.CreateSession()
	if err != nil {
		return 0, err
	}
	defer sess.Close()
	var total atomic.Int64
	var firstErr error
	var once sync.Once
	jobs := make(chan cassandra.Range)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var userid, channel, status, location string
			var orderid int64
			var ts time.Time
			amount := new(inf.Dec)
			for r := range jobs {
				iter := sess.Query(OrdersScan, r.Start, r.End).PageSize(pageSize).Iter()
				n := int64(0)
				for iter.Scan(&userid, &orderid, &channel, &ts, &status, &location, &amount) {
					n++
				}
				if err := iter.Close(); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("range %s: %w", r.Name(), err) })
				}
				total.Add(n)
			}
		}()
	}
	for _, r := range ranges {
		jobs <- r
	}
	close(jobs)
	wg.Wait()
	return total.Load(), firstErr
}

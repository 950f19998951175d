package cqltest_test

import (
	"fmt"
	"math"

	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// A test creates a table, seeds it, points gocql at the server and scans a token range.
func Example() {
	srv, err := cqltest.New()
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	if err := srv.CreateTable("shop", "users", []cqltest.Column{
		{Name: "id", Type: "int"}, {Name: "name", Type: "text"}, {Name: "tags", Type: "set<text>"},
	}, []string{"id"}, nil); err != nil {
		panic(err)
	}
	if err := srv.InsertMany("shop", "users", 3, func(i int, row map[string]any) error {
		row["id"] = int32(i + 1)
		row["name"] = fmt.Sprintf("user-%d", i+1)
		row["tags"] = []string{"a"}
		return nil
	}); err != nil {
		panic(err)
	}
	// Make the 2nd page of any scan of shop.users time out once.
	srv.FailPage(cqltest.FaultMatch{Table: "users", Page: 2, Times: 1}, cqltest.ErrReadTimeout)

	sess, err := srv.NewCluster().CreateSession() // hosts, port and protocol v4 filled in
	if err != nil {
		panic(err)
	}
	defer sess.Close()
	iter := sess.Query(`SELECT id, name, token(id) FROM shop.users WHERE token(id) > ? AND token(id) <= ?`,
		int64(math.MinInt64), int64(math.MaxInt64)).PageSize(2).Iter()
	var id int
	var name string
	var tok int64
	for iter.Scan(&id, &name, &tok) {
		fmt.Println(id, name, tok)
	}
	fmt.Println("error:", iter.Close())
	// Output:
	// 1 user-1 -4069959284402364209
	// 2 user-2 -3248873570005575792
	// error: Operation timed out - received only 0 responses.
}

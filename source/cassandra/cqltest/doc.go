// Package cqltest is an in-process Cassandra test server speaking the CQL native protocol v4,
// for testing rekey's Cassandra source with the real gocql driver inside `go test`.
//
// Tables are created and seeded through the Go API (CreateTable, Insert, InsertMany), never
// through CQL DDL. Rows are kept sorted by (Murmur3 token, partition key, clustering key), the
// order a Cassandra token-range scan returns them in, and each cell is serialized once, at
// insert time, so scans are cheap. Values are stored as Cassandra stores them: sets and map
// keys sorted and unique, an empty non-frozen collection as null.
//
// The server answers what drivers and rekey send: OPTIONS, STARTUP, REGISTER, QUERY,
// PREPARE and EXECUTE; USE; SELECTs on system.local, system.peers, system.peers_v2,
// system.size_estimates and the system_schema tables (keyspaces, tables, columns, views,
// types, functions, aggregates, indexes, triggers, dropped_columns) as Cassandra 4.0 lays them
// out; and SELECTs on API tables:
//
//	SELECT [DISTINCT] *|col, token(pk...), writetime(col), ttl(col), count(*) [AS alias]
//	FROM [ks.]table
//	[WHERE token(pk...) >|>=|<|<=|= ? [AND ...]] [AND pk = ? ...] [AND other relations ... ALLOW FILTERING]
//	[LIMIT n] [ALLOW FILTERING]
//
// with Cassandra's rules for token bounds (a wrapping interval selects nothing; the minimum
// token as a bound means unbounded), paging through page_size and an opaque paging state
// holding the last returned key (so paging stays right when rows change between pages),
// and Cassandra's error codes (Syntax 0x2000, Invalid 0x2200, Unprepared 0x2500, ...).
//
// Fault injection (FailPage, DelayPage, DropPage, DropConnections) and counters (Stats) let
// tests exercise retry and resume for real. WithNodes makes one server look like a cluster
// of several nodes on 127.0.0.1, 127.0.0.2, ... sharing one port.
//
// Not supported: writes through CQL (INSERT/UPDATE/DELETE/BATCH), user-defined types,
// static columns, secondary indexes, IN relations, ORDER BY, authentication, compression and
// server-pushed events.
package cqltest

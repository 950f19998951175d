package cqltest

import (
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/gocql/gocql"
)

// systemDef declares a system table as Cassandra 4.0 defines it.
type systemDef struct {
	cols []Column
	pk   []string
	ck   []string
}

func cols(spec ...string) []Column {
	out := make([]Column, 0, len(spec)/2)
	for i := 0; i+1 < len(spec); i += 2 {
		out = append(out, Column{Name: spec[i], Type: spec[i+1]})
	}
	return out
}

const textMap = "frozen<map<text, text>>"

var systemDefs = map[string]systemDef{
	"system.local": {cols: cols(
		"key", "text", "bootstrapped", "text", "broadcast_address", "inet", "broadcast_port", "int",
		"cluster_name", "text", "cql_version", "text", "data_center", "text", "gossip_generation", "int",
		"host_id", "uuid", "listen_address", "inet", "listen_port", "int", "native_protocol_version", "text",
		"partitioner", "text", "rack", "text", "release_version", "text", "rpc_address", "inet", "rpc_port", "int",
		"schema_version", "uuid", "tokens", "set<text>", "truncated_at", "map<uuid, blob>"),
		pk: []string{"key"}},
	"system.peers": {cols: cols(
		"peer", "inet", "data_center", "text", "host_id", "uuid", "preferred_ip", "inet", "rack", "text",
		"release_version", "text", "rpc_address", "inet", "schema_version", "uuid", "tokens", "set<text>"),
		pk: []string{"peer"}},
	"system.peers_v2": {cols: cols(
		"peer", "inet", "peer_port", "int", "data_center", "text", "host_id", "uuid", "native_address", "inet",
		"native_port", "int", "preferred_ip", "inet", "preferred_port", "int", "rack", "text",
		"release_version", "text", "schema_version", "uuid", "tokens", "set<text>"),
		pk: []string{"peer"}, ck: []string{"peer_port"}},
	"system.size_estimates": {cols: cols(
		"keyspace_name", "text", "table_name", "text", "range_start", "text", "range_end", "text",
		"mean_partition_size", "bigint", "partitions_count", "bigint"),
		pk: []string{"keyspace_name"}, ck: []string{"table_name", "range_start", "range_end"}},
	"system_schema.keyspaces": {cols: cols(
		"keyspace_name", "text", "durable_writes", "boolean", "replication", textMap),
		pk: []string{"keyspace_name"}},
	"system_schema.tables": {cols: cols(
		"keyspace_name", "text", "table_name", "text", "additional_write_policy", "text",
		"bloom_filter_fp_chance", "double", "caching", textMap, "cdc", "boolean", "comment", "text",
		"compaction", textMap, "compression", textMap, "crc_check_chance", "double",
		"default_time_to_live", "int", "extensions", "frozen<map<text, blob>>", "flags", "frozen<set<text>>",
		"gc_grace_seconds", "int", "id", "uuid", "max_index_interval", "int", "memtable_flush_period_in_ms", "int",
		"min_index_interval", "int", "read_repair", "text", "speculative_retry", "text"),
		pk: []string{"keyspace_name"}, ck: []string{"table_name"}},
	"system_schema.columns": {cols: cols(
		"keyspace_name", "text", "table_name", "text", "column_name", "text", "clustering_order", "text",
		"column_name_bytes", "blob", "kind", "text", "position", "int", "type", "text"),
		pk: []string{"keyspace_name"}, ck: []string{"table_name", "column_name"}},
	// Cassandra 4.0 dropped dclocal_read_repair_chance and read_repair_chance from views, but
	// gocql v1.7.0 still selects them, so this table has both generations of columns.
	"system_schema.views": {cols: cols(
		"keyspace_name", "text", "view_name", "text", "additional_write_policy", "text", "base_table_id", "uuid",
		"base_table_name", "text", "bloom_filter_fp_chance", "double", "caching", textMap, "cdc", "boolean",
		"comment", "text", "compaction", textMap, "compression", textMap, "crc_check_chance", "double",
		"dclocal_read_repair_chance", "double", "default_time_to_live", "int", "extensions", "frozen<map<text, blob>>",
		"gc_grace_seconds", "int", "id", "uuid", "include_all_columns", "boolean", "max_index_interval", "int",
		"memtable_flush_period_in_ms", "int", "min_index_interval", "int", "read_repair", "text",
		"read_repair_chance", "double", "speculative_retry", "text", "where_clause", "text"),
		pk: []string{"keyspace_name"}, ck: []string{"view_name"}},
	"system_schema.types": {cols: cols(
		"keyspace_name", "text", "type_name", "text", "field_names", "frozen<list<text>>", "field_types", "frozen<list<text>>"),
		pk: []string{"keyspace_name"}, ck: []string{"type_name"}},
	"system_schema.functions": {cols: cols(
		"keyspace_name", "text", "function_name", "text", "argument_types", "frozen<list<text>>",
		"argument_names", "frozen<list<text>>", "body", "text", "called_on_null_input", "boolean",
		"language", "text", "return_type", "text"),
		pk: []string{"keyspace_name"}, ck: []string{"function_name", "argument_types"}},
	"system_schema.aggregates": {cols: cols(
		"keyspace_name", "text", "aggregate_name", "text", "argument_types", "frozen<list<text>>",
		"final_func", "text", "initcond", "text", "return_type", "text", "state_func", "text", "state_type", "text"),
		pk: []string{"keyspace_name"}, ck: []string{"aggregate_name", "argument_types"}},
	"system_schema.indexes": {cols: cols(
		"keyspace_name", "text", "table_name", "text", "index_name", "text", "kind", "text", "options", textMap),
		pk: []string{"keyspace_name"}, ck: []string{"table_name", "index_name"}},
	"system_schema.triggers": {cols: cols(
		"keyspace_name", "text", "table_name", "text", "trigger_name", "text", "options", textMap),
		pk: []string{"keyspace_name"}, ck: []string{"table_name", "trigger_name"}},
	"system_schema.dropped_columns": {cols: cols(
		"keyspace_name", "text", "table_name", "text", "column_name", "text", "dropped_time", "timestamp",
		"kind", "text", "type", "text"),
		pk: []string{"keyspace_name"}, ck: []string{"table_name", "column_name"}},
}

var (
	schemaOnce sync.Once
	schemas    map[string]*table
)

// systemSchema returns an empty table with the schema of a system table, or nil.
func systemSchema(ks, name string) *table {
	schemaOnce.Do(func() {
		schemas = map[string]*table{}
		for full, d := range systemDefs {
			k, n := splitName(full)
			t, err := newTable(k, n, d.cols, d.pk, d.ck)
			if err != nil {
				panic(fmt.Sprintf("cqltest: system table %s: %v", full, err))
			}
			schemas[full] = t
		}
	})
	return schemas[ks+"."+name]
}

func splitName(full string) (string, string) {
	for i := 0; i < len(full); i++ {
		if full[i] == '.' {
			return full[:i], full[i+1:]
		}
	}
	return "", full
}

// systemTable returns a system table filled with its current rows, as node n sees them.
func (s *Server) systemTable(n *node, ks, name string) (*table, error) {
	full := ks + "." + name
	d, ok := systemDefs[full]
	if !ok {
		return nil, fmt.Errorf("unconfigured table %s", name)
	}
	cacheKey := strconv.Itoa(n.idx) + "/" + full
	cacheable := full != "system.size_estimates"
	if cacheable {
		s.mu.RLock()
		t := s.sysCache[cacheKey]
		s.mu.RUnlock()
		if t != nil {
			return t, nil
		}
	}
	t, err := newTable(ks, name, d.cols, d.pk, d.ck)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	rows := s.systemRows(n, full)
	ver := s.schemaVer
	s.mu.RUnlock()
	enc := make([]row, 0, len(rows))
	for _, r := range rows {
		er, _, err := t.encodeRow(r, 0, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("system table %s: %w", full, err)
		}
		enc = append(enc, er)
	}
	t.insert(enc)
	if cacheable {
		s.mu.Lock()
		if s.schemaVer == ver {
			s.sysCache[cacheKey] = t
		}
		s.mu.Unlock()
	}
	return t, nil
}

func (s *Server) schemaVersion() gocql.UUID {
	return nameUUID("schema:" + strconv.FormatUint(s.schemaVer, 10))
}

func tokenStrings(toks []int64) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = strconv.FormatInt(t, 10)
	}
	return out
}

// systemRows returns the rows of a system table. The caller holds s.mu (read).
func (s *Server) systemRows(n *node, full string) []map[string]any {
	var out []map[string]any
	switch full {
	case "system.local":
		out = append(out, map[string]any{
			"key": "local", "bootstrapped": "COMPLETED", "broadcast_address": n.ip, "broadcast_port": 7000,
			"cluster_name": s.cfg.cluster, "cql_version": "3.4.5", "data_center": n.dc,
			"gossip_generation": 1700000000, "host_id": n.hostID, "listen_address": n.ip, "listen_port": 7000,
			"native_protocol_version": "4", "partitioner": s.cfg.partitioner, "rack": s.cfg.rack,
			"release_version": s.cfg.release, "rpc_address": n.ip, "rpc_port": s.port,
			"schema_version": s.schemaVersion(), "tokens": tokenStrings(n.tokens),
		})
	case "system.peers", "system.peers_v2":
		for _, p := range s.nodes {
			if p == n {
				continue
			}
			r := map[string]any{
				"peer": p.ip, "data_center": p.dc, "host_id": p.hostID, "rack": s.cfg.rack,
				"release_version": s.cfg.release, "schema_version": s.schemaVersion(), "tokens": tokenStrings(p.tokens),
			}
			if full == "system.peers" {
				r["rpc_address"] = p.ip
			} else {
				r["peer_port"] = 7000
				r["native_address"] = p.ip
				r["native_port"] = s.port
			}
			out = append(out, r)
		}
	case "system_schema.keyspaces":
		local := map[string]string{"class": "org.apache.cassandra.locator.LocalStrategy"}
		for _, k := range []string{"system", "system_schema"} {
			out = append(out, map[string]any{"keyspace_name": k, "durable_writes": true, "replication": local})
		}
		for _, ks := range s.keyspaces {
			out = append(out, map[string]any{"keyspace_name": ks.name, "durable_writes": true, "replication": ks.replication})
		}
	case "system_schema.tables", "system_schema.views":
		for _, ks := range s.keyspaces {
			for _, t := range ks.tables {
				if (t.base != "") != (full == "system_schema.views") {
					continue
				}
				r := map[string]any{
					"keyspace_name": ks.name, "table_name": t.name, "additional_write_policy": "99p",
					"bloom_filter_fp_chance": 0.01, "caching": map[string]string{"keys": "ALL", "rows_per_partition": "NONE"},
					"cdc": false, "comment": "",
					"compaction":       map[string]string{"class": "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy", "max_threshold": "32", "min_threshold": "4"},
					"compression":      map[string]string{"chunk_length_in_kb": "16", "class": "org.apache.cassandra.io.compress.LZ4Compressor"},
					"crc_check_chance": 1.0, "default_time_to_live": t.ttl, "extensions": map[string][]byte{},
					"flags": []string{"compound"}, "gc_grace_seconds": 864000, "id": t.id, "max_index_interval": 2048,
					"memtable_flush_period_in_ms": 0, "min_index_interval": 128, "read_repair": "BLOCKING",
					"speculative_retry": "99p",
				}
				if t.base != "" { // a view: its own default_time_to_live is always 0
					delete(r, "table_name")
					delete(r, "flags")
					r["view_name"], r["base_table_name"], r["include_all_columns"], r["where_clause"] = t.name, t.base, false, ""
					if b := ks.tables[t.base]; b != nil {
						r["base_table_id"] = b.id
					}
					r["default_time_to_live"] = 0
				}
				out = append(out, r)
			}
		}
	case "system_schema.columns":
		for _, ks := range s.keyspaces {
			for _, t := range ks.tables {
				for _, c := range t.cols {
					order := "none"
					if c.kind == "clustering" {
						order = "asc"
						if c.desc {
							order = "desc"
						}
					}
					out = append(out, map[string]any{
						"keyspace_name": ks.name, "table_name": t.name, "column_name": c.name,
						"clustering_order": order, "column_name_bytes": []byte(c.name), "kind": c.kind,
						"position": c.position, "type": c.typ.name,
					})
				}
			}
		}
	case "system.size_estimates":
		for _, ks := range s.keyspaces {
			for _, t := range ks.tables {
				out = append(out, t.sizeEstimates(n.idx, s.tokens, n.tokens)...)
			}
		}
	}
	return out
}

// sizeEstimates lists the node's primary ranges (previous ring token, own token] for a table
// with the partitions they hold, as system.size_estimates does (exact counts here). ring is
// every token of the cluster, sorted. The rows are computed once per node and generation of the
// table's data.
func (t *table) sizeEstimates(node int, ring, own []int64) []map[string]any {
	rows := t.readLocked()
	defer t.mu.RUnlock()
	t.estMu.Lock()
	defer t.estMu.Unlock()
	if e, ok := t.est[node]; ok && e.gen == t.gen {
		return e.rows
	}
	out := countEstimates(t, rows, ring, own)
	if t.est == nil {
		t.est = map[int]estimates{}
	}
	t.est[node] = estimates{gen: t.gen, rows: out}
	return out
}

func countEstimates(t *table, rows []row, ring, own []int64) []map[string]any {
	var out []map[string]any
	for _, end := range own {
		i := sort.Search(len(ring), func(k int) bool { return ring[k] >= end })
		start := ring[(i+len(ring)-1)%len(ring)]
		parts, size := int64(0), int64(0)
		count := func(lo, hi int64, loExcl bool) {
			k := sort.Search(len(rows), func(j int) bool {
				return rows[j].token > lo || !loExcl && rows[j].token >= lo
			})
			var prev []byte
			for ; k < len(rows) && rows[k].token <= hi; k++ {
				if prev == nil || string(prev) != string(rows[k].pk()) {
					parts++
				}
				prev = rows[k].pk()
				size += int64(len(rows[k].buf))
			}
		}
		if start < end {
			count(start, end, true)
		} else { // the range wrapping around the end of the ring
			count(start, 1<<63-1, true)
			count(-1<<63, end, false)
		}
		mean := int64(0)
		if parts > 0 {
			mean = size / parts
		}
		out = append(out, map[string]any{
			"keyspace_name": t.keyspace, "table_name": t.name,
			"range_start": strconv.FormatInt(start, 10), "range_end": strconv.FormatInt(end, 10),
			"mean_partition_size": mean, "partitions_count": parts,
		})
	}
	return out
}

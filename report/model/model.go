// Package model is the report as data: Report and its parts, what --json writes and what the
// renderings read, with the write-order vocabulary and how the report writes numbers.
package model

import "github.com/rekey/rekey/transform"

// The report as data: what --json writes (schema in README.md) and what the terminal and HTML
// renderings read. Every figure is here; renderings compute nothing new.

// SchemaVersion names the JSON layout; it changes only when a field changes meaning or goes away.
const SchemaVersion = "rekey.report/v1"

// Severity of a finding.
const (
	SevError   = "error"
	SevWarning = "warning"
	SevInfo    = "info"
)

// Report is the whole report.
type Report struct {
	Schema         string       `json:"schema"`
	Generator      string       `json:"generator"`
	Mapping        MappingInfo  `json:"mapping"`
	Source         SourceInfo   `json:"source"`
	Totals         Totals       `json:"totals"`
	Verdict        Verdict      `json:"verdict"`
	Findings       []Finding    `json:"findings"`
	Key            KeyShape     `json:"key"`
	Uniqueness     Uniqueness   `json:"uniqueness"`
	FirstColumn    FirstColumn  `json:"first_column"`
	Plan           PlanInfo     `json:"plan"`
	Regions        []Region     `json:"regions"`
	Distribution   Distribution `json:"distribution"`
	Hotspot        Hotspot      `json:"hotspot"`
	HotspotWindows []Window     `json:"hotspot_windows"`
	// HotRows are the keys written most often within a window of writes: single-row hotspots
	HotRows HotRows     `json:"hot_rows"`
	Queries []QueryInfo `json:"queries"` // the declared access patterns the advisor ranks by
	// Workload is how the advisor weighs reads against write spread: reads_first (the default:
	// the guide salts only "when write distribution is more critical than read simplicity") or
	// write_heavy (declared with workload: write_heavy in the mapping or --workload).
	Workload     string        `json:"workload"`
	Alternatives []Alternative `json:"alternatives"`
	// Indexes are the indexes offered for declared queries the mapping's key serves only by
	// scanning the whole table: a secondary index (with its CREATE INDEX) or an index table.
	Indexes        []IndexOffer   `json:"indexes"`
	Recommendation Recommendation `json:"recommendation"`
	TimeHeatmap    *TimeHeatmap   `json:"time_heatmap"` // null when the write order has no axis (arrival order, offsets)
	WriteOrder     *WriteOrder    `json:"write_order"`  // the order the application is taken to write rows in

	Design []transform.DesignRule `json:"-"` // the mapping's static design rules the findings quote
	// WriteMappingDir is the folder the report's own --write-mapping writes the designs to: the
	// next steps name the files there instead of telling to add the flag
	WriteMappingDir string `json:"-"`
}

// MappingInfo identifies the mapping analysed.
type MappingInfo struct {
	File        string      `json:"file"`
	Table       string      `json:"table"`
	PrimaryKey  string      `json:"primary_key"` // bracket notation, resolved
	KeyColumns  []KeyColumn `json:"key_columns"`
	Fingerprint string      `json:"fingerprint"`
	// TTLPlan is the table TTL and what Lindorm counts it from (the cells' source write times
	// with target.write_time, or the copy's time), as check prints it; absent when the mapping
	// neither sets a TTL nor carries write times.
	TTLPlan string `json:"ttl_plan,omitempty"`
}

// KeyColumn is one primary-key column with its per-value figures.
type KeyColumn struct {
	Name      string   `json:"name"`
	Expr      string   `json:"expr"`
	Type      string   `json:"type"`
	Desc      bool     `json:"desc"`
	Sources   []string `json:"sources"`    // source columns it is computed from
	MaxBytes  int      `json:"max_bytes"`  // longest value (text columns; fixed width otherwise)
	MeanBytes float64  `json:"mean_bytes"` //
	JSONLike  int64    `json:"json_like"`  // values that look like a JSON object or array
	LongText  int64    `json:"long_text"`  // values over 256 bytes
	// Distinct values of the column (HyperLogLog, about 0.4% error; exact for the first column
	// while distinct_exact).
	Distinct      int64 `json:"distinct"`
	DistinctExact bool  `json:"distinct_exact"`
	// CommonPrefix is the longest prefix every value shares (text columns), PrefixBytes its length.
	CommonPrefix string `json:"common_prefix"`
	PrefixBytes  int    `json:"common_prefix_bytes"`
	MinBytes     int    `json:"min_bytes"`
	// Numeric: every value is a decimal number without sign or leading zero, up to 18 digits,
	// which long() stores as a BIGINT in 8 bytes (text columns).
	Numeric bool `json:"numeric"`
	// Incremental: new rows bring a larger (or smaller) value than the rows before them, in the
	// order the application creates rows; IncrementalEvidence says what showed it. Filled by the
	// write-order model.
	Incremental         bool   `json:"incremental"`
	IncrementalEvidence string `json:"incremental_evidence,omitempty"`
	// PrefixDistinct is the number of distinct values of the key columns before this one, on
	// the subsample (0 for the first column). Filled by the write-order model.
	PrefixDistinct int64 `json:"prefix_distinct"`
}

// SourceInfo says what was read.
type SourceInfo struct {
	URI           string  `json:"uri"`
	EstimatedRows int64   `json:"estimated_rows"` // the source's own estimate, -1 when unknown
	Sampled       bool    `json:"sampled"`
	Sample        string  `json:"sample"`      // how: "all", "1 row in 10, chosen by a hash of its position", "5000 rows spread over the input", "first 1000 rows"
	Scale         float64 `json:"scale"`       // factor from analysed rows to the whole input (1 when all was read)
	ScaleKnown    bool    `json:"scale_known"` // false when the input size is unknown (a sampled stream)
}

// Totals are the row and byte counts.
type Totals struct {
	RowsRead             int64            `json:"rows_read"`              // records the source delivered
	RowsAnalysed         int64            `json:"rows_analysed"`          // records run through the mapping
	RowsSkipped          int64            `json:"rows_skipped,omitempty"` // read and left out by the source itself (since=, expired cells, other tables than source.table): not in RowsRead
	RowsOK               int64            `json:"rows_ok"`
	RowsRejected         int64            `json:"rows_rejected"`
	RejectCodes          map[string]int64 `json:"reject_codes"`
	RejectExamples       []RejectExample  `json:"reject_examples"`
	TargetBytes          int64            `json:"target_bytes"`           // of the analysed rows (uncompressed KeyValue estimate)
	EstimatedTargetBytes int64            `json:"estimated_target_bytes"` // scaled to the whole input
	KeyBytes             int64            `json:"key_bytes"`
	Seconds              float64          `json:"seconds"`
	RowsPerSec           float64          `json:"rows_per_sec"`
}

// RejectExample is one rejected row.
type RejectExample struct {
	Position string `json:"position"`
	Stage    string `json:"stage"` // source or transform
	Code     string `json:"code"`
	Field    string `json:"field,omitempty"`
	Message  string `json:"message"`
	Ord      int64  `json:"-"` // the row's ordinal, for ordering the examples
}

// Verdict sums the findings up.
type Verdict struct {
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	Infos    int `json:"infos"`
	// ExitCode is what `rekey report` exits with: 2 with errors, 1 with warnings under --strict, else 0.
	ExitCode int  `json:"exit_code"`
	Strict   bool `json:"strict"`
}

// Finding is one rule's verdict with its evidence. Evidence values are numbers only.
type Finding struct {
	Rule     string             `json:"rule"`
	Severity string             `json:"severity"`
	Message  string             `json:"message"`
	Evidence map[string]float64 `json:"evidence"`
	// NotJudged marks an info finding of a rule that had too little data to judge (too few rows,
	// a single value): it passes nothing, and rekey check names it
	NotJudged bool `json:"not_judged,omitempty"`
	// Path is where in the mapping a rule of the mapping alone points (rekey check prints it)
	Path string `json:"-"`
}

// KeyShape is the key's size and column count.
type KeyShape struct {
	Columns     int     `json:"columns"`
	MinBytes    int     `json:"min_bytes"`
	MeanBytes   float64 `json:"mean_bytes"`
	P50Bytes    int     `json:"p50_bytes"`
	P99Bytes    int     `json:"p99_bytes"`
	MaxBytes    int     `json:"max_bytes"`
	FixedLength bool    `json:"fixed_length"`
	// OverLimit counts keys over Lindorm's 2048 bytes (rejected by the mapping as key_too_long).
	OverLimit int64 `json:"over_limit"`
}

// Uniqueness is the collision check.
type Uniqueness struct {
	Exact bool `json:"exact"` // false on a sample: collisions between unsampled rows are not seen
	// Keys is the number of distinct target keys.
	Keys int64 `json:"keys"`
	// CollidingKeys are target keys produced by more than one distinct source row.
	CollidingKeys int64 `json:"colliding_keys"`
	// CollisionRows would be silently overwritten: per key, distinct source rows - 1.
	CollisionRows int64 `json:"collision_rows"`
	// DuplicateRows are identical source rows repeated (same key, same values): not a loss.
	DuplicateRows int64 `json:"duplicate_rows"`
	// SourceColumns are the source columns the key is computed from, shown in the examples.
	SourceColumns []string           `json:"source_columns"`
	Examples      []CollisionExample `json:"examples"`
	// Suggestion is the smallest key change that tells the colliding rows apart; null without
	// collisions.
	Suggestion *KeySuggestion `json:"suggestion"`
}

// KeySuggestion is the advice of the uniqueness rule: which source columns to add to the key so
// that rows that share a key today no longer do. Colliding rows are compared column by column
// (a 32-bit hash of each of the first 64 source columns); the smallest set of columns (at most
// 3, and no more than the key's 5-column limit allows) in which every compared pair differs is
// suggested.
type KeySuggestion struct {
	Add        []string `json:"add"`         // source columns to append to the key; empty when no set works
	PrimaryKey string   `json:"primary_key"` // the mapping's key with them appended
	// SeparatesAll: every pair of colliding rows compared differs in Add; with Checked true that
	// is every pair there is, so the change removes every collision.
	SeparatesAll bool  `json:"separates_all"`
	Checked      bool  `json:"checked"`             // all pairs compared (no key had more than 32 distinct rows)
	CheckedKeys  int64 `json:"checked_keys"`        // colliding keys whose rows were all compared
	PartlyKeys   int64 `json:"partly_checked_keys"` // keys with more than 32 distinct rows: their first 32 compared
	Pairs        int64 `json:"pairs"`               // pairs of colliding rows compared
	PairsLeft    int64 `json:"pairs_left"`          // compared pairs Add does not separate
	// DifferIn counts, per source column, the compared pairs that differ in it (most first).
	DifferIn []ColumnDiff `json:"differ_in"`
	Message  string       `json:"message"`
}

// ColumnDiff is how many compared pairs of colliding rows differ in a column.
type ColumnDiff struct {
	Column string `json:"column"`
	Pairs  int64  `json:"pairs"`
}

// CollisionExample shows one key and the distinct source rows that produce it.
type CollisionExample struct {
	Key     []string     `json:"key"`
	Rows    int64        `json:"rows"`
	Sources int64        `json:"distinct_sources"`
	Origins []ExampleRow `json:"origins"`
	// SameKeySources: the rows agree on every source column the key is computed from and differ
	// only in others, so the key does not identify a source row (rather than a function that
	// maps two values to one).
	SameKeySources bool `json:"same_key_sources"`
	// DifferIn lists the source columns in which the key's distinct source rows (all of them,
	// not only the origins shown) do not all agree.
	DifferIn []string `json:"differ_in"`
}

// ExampleRow is a source row behind a key: where it was read and the source values the key is
// computed from.
type ExampleRow struct {
	Position string            `json:"position"`
	Values   map[string]string `json:"values"`
}

// FirstColumn describes the first key column, the one Lindorm partitions by.
type FirstColumn struct {
	Name          string     `json:"name"`
	Type          string     `json:"type"`
	Distinct      int64      `json:"distinct"`
	DistinctExact bool       `json:"distinct_exact"` // false: a HyperLogLog estimate (about 0.4% error)
	Top           []TopValue `json:"top"`
	TopExact      bool       `json:"top_exact"`
	// OtherMaxShare bounds the share of any value not listed in top (Space-Saving's guarantee).
	OtherMaxShare float64 `json:"other_max_share"`
	CommonPrefix  string  `json:"common_prefix"` // longest prefix every value shares (canonical text)
	PrefixBytes   int     `json:"common_prefix_bytes"`
	MinBytes      int     `json:"min_bytes"`
	// MonotonicUp is the share of rows whose first column is >= the previous row's (arrival
	// order); MonotonicDown the share <=. Timestamps and auto-increment ids give ~1.0.
	MonotonicUp   float64 `json:"monotonic_up"`
	MonotonicDown float64 `json:"monotonic_down"`
}

// TopValue is a frequent first-column value. Rows is an upper bound, RowsMin a lower bound (equal
// when exact).
type TopValue struct {
	Value    string  `json:"value"`
	Rows     int64   `json:"rows"`
	RowsMin  int64   `json:"rows_min"`
	Share    float64 `json:"share"`     // RowsMin / accepted rows (a lower bound)
	ShareMax float64 `json:"share_max"` // Rows / accepted rows (an upper bound)
}

// PlanInfo is the region plan analysed.
type PlanInfo struct {
	Regions  int    `json:"regions"`
	Strategy string `json:"strategy"` // hex_prefix, int_bucket, quantile, explicit, single
	// Asked is the region count asked for (--regions, the mapping's count, or the one chosen
	// for the analysis): more than regions when the first column has too few values to place
	// them. The advisor judges every design over this many regions, and regions bounded by the
	// full key reach it once Lindorm splits by size.
	Asked     int      `json:"asked"`
	Origin    string   `json:"origin"` // --regions, mapping, recommendation, default
	Desc      bool     `json:"desc"`
	SplitKeys []string `json:"split_keys"`
	Note      string   `json:"note,omitempty"`
}

// Region is one region's load.
type Region struct {
	Index int     `json:"index"`
	Start string  `json:"start"` // inclusive first-column value; "" for the open start
	End   string  `json:"end"`   // exclusive; "" for the open end
	Rows  int64   `json:"rows"`
	Bytes int64   `json:"bytes"`
	Share float64 `json:"share"`
}

// Distribution condenses the regions.
type Distribution struct {
	Regions        int     `json:"regions"`
	RowsMaxMean    float64 `json:"rows_max_mean"`  // busiest region's rows / mean rows
	BytesMaxMean   float64 `json:"bytes_max_mean"` //
	CV             float64 `json:"cv"`             // coefficient of variation of rows per region
	EmptyRegions   int     `json:"empty_regions"`
	Unreachable    int     `json:"unreachable_regions"` // regions that can never get data: regions - distinct first-column values, when positive
	HottestRegions []int   `json:"hottest_regions"`
}

// Hotspot condenses the windows.
type Hotspot struct {
	// Order is the write order's evidence the windows follow (WriteOrder.Evidence): in any order
	// but arrival, windows cut the advisor's subsample sorted by it.
	Order         string  `json:"order"`
	Windows       int     `json:"windows"`
	RowsPerWindow int64   `json:"rows_per_window"`
	EvenShare     float64 `json:"even_share"`     // 1 / regions
	MeanTopShare  float64 `json:"mean_top_share"` // share of each window's writes in its busiest region, averaged
	MaxTopShare   float64 `json:"max_top_share"`
	HotFactor     float64 `json:"hot_factor"` // mean_top_share / even_share: 1 even, = regions when one region takes all
	TopRegions    int     `json:"distinct_top_regions"`
}

// Window is one slice of the input in arrival order.
type Window struct {
	Index     int     `json:"index"`
	FirstRow  int64   `json:"first_row"` // among accepted rows
	Rows      int64   `json:"rows"`
	TopRegion int     `json:"top_region"`
	TopShare  float64 `json:"top_share"`
	Counts    []int64 `json:"counts"` // rows per region
}

// Alternative is one key design the advisor compared.
type Alternative struct {
	ID           string  `json:"id"` // mapping, source_key, hash_prefix, reverse, bucket, salt
	Name         string  `json:"name"`
	PrimaryKey   string  `json:"primary_key"`
	IsMapping    bool    `json:"is_mapping"`
	SameAs       string  `json:"same_as,omitempty"` // the mapping's key is this derived design
	Rank         int     `json:"rank"`
	Grade        string  `json:"grade"` // good, fair, poor
	Regions      int     `json:"regions"`
	Strategy     string  `json:"strategy"`
	Rows         int64   `json:"rows"` // subsample rows the design accepted
	RowsMaxMean  float64 `json:"rows_max_mean"`
	CV           float64 `json:"cv"`
	MeanTopShare float64 `json:"mean_top_share"`
	HotFactor    float64 `json:"hot_factor"`
	// SplitHotFactor is the hot factor over regions bounded by the full key: the subsample cut
	// into as many equal key ranges as regions analysed, as Lindorm's size-based splits (a region
	// past 8 GiB splits inside one first-column value) leave the table once it has grown. The
	// grade judges writes by it.
	SplitHotFactor float64 `json:"split_hot_factor"`
	Monotonic      float64 `json:"monotonic"`
	// Incremental: the first key column is incremental by the write-order model (as
	// write_order.key_columns judges the mapping's): every new row lands at the end of the key
	// space, so the design grades poor and never ranks first.
	Incremental bool `json:"incremental_first"`
	// Salt is n of the key's random(n), 0 without one: every GET is n lookups, and a
	// replication cannot delete or update its rows in place (transform.SaltCost). Unless the
	// workload is write_heavy, a salted design ranks below every design that spreads as well
	// without one.
	Salt       int64 `json:"salt"`
	Distinct   int64 `json:"distinct_first"`
	Collisions int64 `json:"collision_rows"` // within the subsample only: see Overwritten
	Rejected   int64 `json:"rejected"`
	// Overwritten is the rows the design's keys would overwrite over the whole analysed input:
	// for the mapping the uniqueness check's collision_rows, for a derived design the same exact
	// check on the columns it reads (OverwrittenExact false: only the subsample's, scaled).
	Overwritten      int64 `json:"overwritten_rows"`
	OverwrittenExact bool  `json:"overwritten_exact"`
	// RejectedRows is the rows it rejects over the analysed input: exact for the mapping; for a
	// derived design the rows the source itself rejected (every design alike) plus the
	// subsample's share of the rest.
	RejectedRows int64 `json:"rejected_rows"`
	// LostRows = Overwritten + RejectedRows: what the text's "lost" column shows.
	LostRows     int64       `json:"lost_rows"`
	Added        []string    `json:"added_columns"` // source columns appended for uniqueness (the suggested key change)
	MeanKeyBytes float64     `json:"mean_key_bytes"`
	Reads        Reads       `json:"reads"`
	Queries      []QueryPlan `json:"queries"` // how it serves each declared query
	TradeOff     string      `json:"trade_off"`
	RegionRows   []int64     `json:"region_rows"`
	WindowTop    []float64   `json:"window_top_shares"`
	Error        string      `json:"error,omitempty"` // the design could not be built

	Edit MappingEdit `json:"-"` // for --write-mapping
	// EnumFirst: an enumerated first column no declared query scans by; it ranks below the
	// designs that serve the queries as well without one
	EnumFirst bool `json:"-"`
	// RankKeyBytes is the key size the ranking's last tie-break compares: MeanKeyBytes, or for a
	// design that only adds a code() dictionary to another, the other's (a dictionary must be
	// kept complete, so a code() on top of a design never outranks it by bytes alone)
	RankKeyBytes float64 `json:"-"`
}

// Reads is how many regions (or separate scans) typical queries touch: 1 is a single GET or one
// range SCAN; N a fan-out over N ranges; -1 all regions (a full-table scan).
type Reads struct {
	Get        int `json:"get"`         // full key lookup
	PrefixScan int `json:"prefix_scan"` // all rows of one value of the source key's first column
	RangeScan  int `json:"range_scan"`  // a range of the source key's first column
}

// Recommendation is how many regions to pre-split, with their split keys.
type Recommendation struct {
	RegionSize int64         `json:"region_size"` // 8 GiB unless the mapping's regions.size says otherwise
	Bulkload   RegionAdvice  `json:"bulkload"`
	API        *RegionAdvice `json:"api"` // null without --nodes
}

// RegionAdvice is one region count with its split keys.
type RegionAdvice struct {
	Regions   int      `json:"regions"`
	Basis     string   `json:"basis"`
	Strategy  string   `json:"strategy"`
	SplitKeys []string `json:"split_keys"`
	SQL       string   `json:"sql"` // WITH (SPLITKEYS='...') fragment; empty for one region
}

// TimeHeatmap is the accepted rows by time (the mapping's timestamp column, in bins) and key range
// (region groups, in key order): when the data was written against where its keys land.
type TimeHeatmap struct {
	Column string `json:"column"` // the write order's column, or its evidence (writetime, kafka_timestamp)
	Order  string `json:"order"`  // the write order's evidence (WriteOrder.Evidence)
	// Axis is time (bins of epoch ms) or value (a declared integer column: bins of its values).
	Axis string `json:"axis"`
	// StartMillis is the first bin's start (epoch ms), BinMillis each bin's width.
	StartMillis int64 `json:"start_ms"`
	BinMillis   int64 `json:"bin_ms"`
	// RegionsPerRow regions are summed in each row (many regions are grouped).
	RegionsPerRow int       `json:"regions_per_row"`
	Rows          []HeatRow `json:"rows"`      // region groups, in key order
	Bins          []TimeBin `json:"bins"`      // in time order
	NullRows      int64     `json:"null_rows"` // rows with no timestamp (not in any bin)
}

// HeatRow is one row of the time heatmap: a group of adjacent regions.
type HeatRow struct {
	FirstRegion int    `json:"first_region"`
	Start       string `json:"start"` // the first region's start key ("" for the open start)
}

// TimeBin is one time slice: its rows per heatmap row.
type TimeBin struct {
	StartMillis int64   `json:"start_ms"`
	Rows        int64   `json:"rows"`
	Counts      []int64 `json:"counts"` // per heatmap row
}

// MappingEdit is how a design's mapping differs from the user's: what --write-mapping changes
// in the file.
type MappingEdit struct {
	Pk          string         // target.primary_key
	DropColumns []string       // target.columns entries removed
	DropExclude []string       // target.exclude entries removed
	DropAll     bool           // every target.columns entry removed
	KeepRegions bool           // the mapping's regions: stay (else the analysed count)
	Codes       transform.Dict // a dictionary added to target.codes ("" Name: none)
}

// Single-row hotspots: one row written again and again (a counter, a status updated by every
// event of an order). The wide-table guide: "Requests for the same row are always distributed
// to the same node ... you can only resolve this issue by scaling up the specification of the
// node": no key design spreads it. The advisor's subsample, in write order (a Kafka or CDC
// window's timestamps or offsets, Cassandra's WRITETIME(), a time column), is cut into windows
// and the writes of each key counted per window.

// HotRows are the keys written most often within a window of writes.
type HotRows struct {
	Order         string   `json:"order"`           // the write order's evidence (write_order.evidence)
	Rows          int64    `json:"rows"`            // subsample rows counted
	Windows       int      `json:"windows"`         // windows they were cut into
	RowsPerWindow int64    `json:"rows_per_window"` // rows per window (the last may hold up to 1.5x)
	EvenShare     float64  `json:"even_share"`      // 1 / regions asked: a region's share of the writes
	Top           []HotRow `json:"top"`             // up to 5 keys written more than once in a window, most first
}

// HotRow is one key and its writes.
type HotRow struct {
	Key          []string `json:"key"`           // the key's values as text
	Writes       int64    `json:"writes"`        // subsample rows with this key
	WindowWrites int64    `json:"window_writes"` // the most in one window
	WindowShare  float64  `json:"window_share"`  // that window's share of them
}

// Index offers: for a declared query the mapping's key serves only by scanning the whole table,
// the guides' other answer beside a key change: "For queries that cannot be expressed with GET
// or SCAN, use an index table or secondary index" (primary-key guide). A secondary index is an
// index table keyed by the indexed columns, so "the column for which a secondary index is created
// must be designed in the same manner as the primary key" (wide-table guide): the advisor's
// design keyed by the query's columns (query_order) judges it. When that key would concentrate
// writes, the offer is an index table keyed by the best design for the query instead, which
// --write-mapping writes as a mapping to migrate beside the main table.

// IndexOffer is one index offered for a declared query.
type IndexOffer struct {
	Query string `json:"query"`
	// Kind is secondary_index (Lindorm maintains it: DDL) or index_table (a second table keyed
	// for the query, written from the same source with the mapping --write-mapping writes).
	Kind   string `json:"kind"`
	Key    string `json:"key"`    // the index's key columns, or the index table's primary key
	Design string `json:"design"` // the advisor's design whose figures judge the key (alternatives[].id)
	Grade  string `json:"grade"`  // that design's grade
	DDL    string `json:"ddl"`    // CREATE INDEX for a secondary index; "" for an index table
	Note   string `json:"note"`
}

// QueryInfo is a declared query.
type QueryInfo struct {
	Query string   `json:"query"` // "device_id = ? and ts range"
	Equal []string `json:"equal"` // source columns compared with =
	Range string   `json:"range"` // the source column compared with a range, "" for none
	// NewestFirst: the query reads the range from its highest value down (order: newest_first)
	NewestFirst bool   `json:"newest_first"`
	Origin      string `json:"origin"` // mapping (its queries: section) or --query
}

// QueryPlan is how one key design serves one declared query.
type QueryPlan struct {
	Query string `json:"query"`
	// Access is get (every key column fixed: point lookups), scan (a key range) or full_scan
	// (nothing fixes the first key column: every region, which Lindorm refuses by default).
	Access string `json:"access"`
	// Scans is the lookups or key ranges the client issues (a bucket or salt it cannot compute
	// multiplies them); -1 for a full scan.
	Scans int64 `json:"scans"`
	// Filtered lists the query's columns that Lindorm checks row by row instead of seeking on:
	// the scan reads rows the query does not want.
	Filtered []string `json:"filtered"`
	// Unordered: the query reads newest first, but the key does not store its range column DESC
	// right where the scan seeks: Lindorm returns the rows oldest first, to be read backwards or
	// sorted by the client.
	Unordered bool   `json:"unordered"`
	Note      string `json:"note"`
}

// Sample selects part of the input. The zero value reads everything.
type Sample struct {
	Rows     int64   // about this many rows
	Fraction float64 // or this share of the rows, 0 < f <= 1
}

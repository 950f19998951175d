package model

// The write-order model: the order in which the application creates rows, which is the order
// Lindorm will receive new rows after the cut-over. A Cassandra token scan (and a dsbulk
// unload) delivers rows in hash order and an export may be sorted by anything, so the order a
// report reads rows in says little about hotspots. Each row gets a write-order value from the
// best evidence available (a declared column, Cassandra's WRITETIME(), a Kafka message's
// timestamp, a time column of the row, Kafka offsets, arrival as a last resort); windows,
// monotonicity and the advisor's subsample are judged in that order. Memory stays bounded: the
// values go to the time heatmap's bins and to the advisor's bounded subsample, which is sorted
// by them once the pass is over.

// Write-order evidence, best first (WriteOrder.Evidence).
const (
	OrderDeclared    = "declared"        // a column source.write_order or --write-order names
	OrderWriteTime   = "writetime"       // Cassandra WRITETIME() of the row's regular cells
	OrderKafkaTime   = "kafka_timestamp" // the Kafka message's timestamp
	OrderTimeColumn  = "time_column"     // a timestamp, date or timeuuid column of the row, inferred
	OrderKafkaOffset = "kafka_offset"    // offset order within each partition
	OrderArrival     = "arrival"         // the order the report read rows in
)

// OrderHints is what the caller knows about the source's order.
type OrderHints struct {
	// Column is the declared write-order column (source.write_order, or --write-order), "" for none.
	Column       string
	ColumnOrigin string // "source.write_order" or "--write-order"
	// WriteTimes is OrderWriteTime or OrderKafkaTime when the source fills Batch.WriteTimes.
	WriteTimes string
	// Offsets: records' Seq are Kafka offsets, in order within each partition.
	Offsets bool
	// OffsetWindow gives the offsets [first, end) a stream (a partition) is read over, so that
	// partitions of different lengths are put side by side by each message's share of its
	// partition; nil or !ok: raw offsets.
	OffsetWindow func(stream string) (first, end int64, ok bool)
	// Arrival says what the order of reading is, for the arrival finding: "a Cassandra token-range
	// scan (hash order)", "file order".
	Arrival string
	// Notes say why better evidence is missing (a key-only Cassandra table has no WRITETIME()).
	Notes []string
}

// WriteOrder is the write-order model the report used (Report.WriteOrder).
type WriteOrder struct {
	// Evidence is declared, writetime, kafka_timestamp, time_column, kafka_offset or arrival.
	Evidence    string `json:"evidence"`
	Column      string `json:"column"`      // the declared or inferred column, "" otherwise
	Description string `json:"description"` // the evidence in words
	// Axis of the time heatmap: time (epoch ms), value (a declared integer column), or rows.
	Axis string `json:"axis"`
	// Notes say why better evidence was not used.
	Notes []string `json:"notes"`
	// SubsampleRows is how many rows the key columns were judged on (in write order).
	SubsampleRows int        `json:"subsample_rows"`
	KeyColumns    []KeyOrder `json:"key_columns"`
}

// KeyOrder is how one key column's values follow the write order.
type KeyOrder struct {
	Name string `json:"name"`
	// RankCorrelation is Spearman's rho between the column and the write order over the
	// subsample (1: rises with it, -1: falls); 0 in arrival order.
	RankCorrelation float64 `json:"rank_correlation"`
	Distinct        int64   `json:"distinct"`        // distinct values in the subsample
	PrefixDistinct  int64   `json:"prefix_distinct"` // distinct values of the key columns before it (0 for the first)
	// RisesInPrefix is, in write order, over pairs of successive rows with the same values of
	// every key column before this one, the share that keep one direction (>=, or <=); near 1,
	// each prefix value's new rows land at one end of its range. PrefixPairs counts the pairs
	// (0 for the first column and in arrival order, where a partition's clustering order would
	// pass for it).
	RisesInPrefix float64 `json:"rises_in_prefix"`
	PrefixPairs   int64   `json:"prefix_pairs"`
	Incremental   bool    `json:"incremental"`
	Why           string  `json:"why"` // the evidence, when incremental
}

// Label is the evidence in a few words, for findings that say which order they judged in.
func (wo *WriteOrder) Label() string {
	switch wo.Evidence {
	case OrderDeclared:
		return "declared column " + wo.Column
	case OrderTimeColumn:
		return "column " + wo.Column + ", inferred"
	case OrderWriteTime:
		return "Cassandra WRITETIME()"
	case OrderKafkaTime:
		return "Kafka message timestamps"
	case OrderKafkaOffset:
		return "Kafka offsets"
	}
	return "arrival order"
}

// WindowRows says whose rows the write hotspot's windows hold when they are not every accepted
// row: in a write order they are cut from the write-ordered subsample (" of a 5,000-row
// subsample of the 100,000 rows accepted"), "" when they hold every accepted row.
func (rep *Report) WindowRows() string {
	wo := rep.WriteOrder
	if wo == nil || wo.Evidence == OrderArrival || int64(wo.SubsampleRows) >= rep.Totals.RowsOK {
		return ""
	}
	return " of a " + Count(int64(wo.SubsampleRows)) + "-row subsample of the " + Count(rep.Totals.RowsOK) + " rows accepted"
}

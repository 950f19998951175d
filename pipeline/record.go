package pipeline

import (
	"context"
	"fmt"
	"unicode/utf8"
	"unsafe"
)

// Record is one source row. Values follow the SourceSchema order. A source that cannot decode a
// row still emits it, with Err set and Raw holding what it read, so that every input row ends as
// written or rejected and the counts add up.
type Record struct {
	Values []Value
	Seq    int64     // position within the batch's stream: line number, row index, offset
	Raw    string    // the raw input (a CSV line, a JSON document) when the source has one
	Err    *RowError // set when the source could not decode the row
	// Set, when not nil, names the source columns the record sets (Set[i] for Values[i]): a
	// change that touches some cells only (Debezium's Cassandra connector) leaves the others as
	// they are, and a null value in a set column writes NULL. nil: a whole row.
	Set []bool
	// Times, when not nil, holds each source column's cell write time in epoch milliseconds
	// (Times[i] for Values[i]; 0: none, a key column or an unset cell): a Cassandra source
	// fills it when asked for cell write times (a mapping with target.write_time).
	Times []int64
}

// Size is the bytes the record holds: its values, their strings and its raw input (what a
// sample bounded by bytes counts).
func (r *Record) Size() int64 {
	n := int64(len(r.Values))*int64(unsafe.Sizeof(Value{})) + int64(len(r.Raw))
	for i := range r.Values {
		n += int64(len(r.Values[i].Str))
	}
	return n
}

// Batch is a run of records from one stream of a source (a file, a token range, a partition).
type Batch struct {
	Stream  string
	Records []Record
	// Cursor is where the stream resumes after this batch, opaque to the pipeline: a byte
	// offset, a paging state, an offset. Checkpoints store it once the batch is durable.
	Cursor string
	// Done marks the stream's last batch: a resumed run skips the stream entirely.
	Done bool
	// Skipped counts rows the source read and left out by its own filter (a Cassandra
	// catch-up's since=): they are neither written nor rejected, and count as rows in.
	Skipped int64
	// SaltOrigin makes random(n) hash the record's origin (stream and Seq) along with its
	// values: Kafka sets it, because two identical messages are still two events.
	SaltOrigin bool
	// Release, when set, gives the records' memory back to the source for reuse. The consumer
	// calls it at most once, when nothing refers to the records or their values anymore (the
	// runner: once the batch is transformed, written into the sink's buffers and its rejects
	// logged). The values' strings are part of that memory (the file source's point into its
	// read buffer, which is read into again): keep a copy of any needed later. A batch never
	// released is simply garbage-collected.
	Release func()
	// WriteTimes, when not nil, holds each record's write time as the source knows it, in epoch
	// milliseconds (math.MinInt64: unknown): the earliest WRITETIME() of a Cassandra row's
	// regular cells, a Kafka message's timestamp. Sources fill it only when asked to (rekey
	// report's write-order model); the records' order stays the source's.
	WriteTimes []int64
	// Payload is what a batch of a source whose units are not records carries instead (a Kafka
	// partition's decoded changes, which replicate applies); the engine hands it on untouched.
	Payload any
}

// Position names a record for humans and rejects files: "orders.csv:1234", "kafka:t/3:42".
func (b *Batch) Position(r *Record) string { return fmt.Sprintf("%s:%d", b.Stream, r.Seq) }

// RowError says why a row was rejected. Code is stable and machine-readable.
type RowError struct {
	Code    string // parse, type, dict_miss, null_key, key_too_long, key_only_row, value_too_long, eval
	Field   string // the source or target column, or the key element ("target.primary_key[1]")
	Message string
	// RawCut says the record's Raw holds only its start (one too long to keep whole): a replay
	// file, which holds whole records, leaves it out.
	RawCut bool
}

// Reject codes used across sources and the transform.
const (
	CodeParse      = "parse"        // the source could not split or decode the row
	CodeType       = "type"         // a value does not fit its declared type
	CodeDictMiss   = "dict_miss"    // code(x, dict) found no entry and on_missing_code is reject
	CodeNullKey    = "null_key"     // a primary-key column evaluated to null
	CodeKeyTooLong = "key_too_long" // the encoded primary key exceeds 2 KB
	CodeKeyOnlyRow = "key_only_row" // every non-key value is null: Lindorm would store nothing
	// CodeValueTooLong: a non-key value exceeds Lindorm's 2 MB.
	CodeValueTooLong = "value_too_long"
	CodeEval         = "eval"     // an expression failed (overflow, bad argument)
	CodeEncoding     = "encoding" // a text value is not valid UTF-8
	// CodeUnsetKey: a key column of a partial record reads a source column the record does not set.
	CodeUnsetKey = "unset_key"
	// CodeUnsetInput: a column of a partial record reads set and unset source columns at once.
	CodeUnsetInput = "unset_input"
	// CodePartialUpdate: a partial record reached an output that writes whole rows (files).
	CodePartialUpdate = "partial_update"
	// CodeRangeTombstone: a delete of a clustering range the output cannot express.
	CodeRangeTombstone = "range_tombstone"
	// CodeCSVValue: a value the CSV format cannot carry to Lindorm (its bulkload's Spark CSV reader
	// would read another value): an empty string, a line break.
	CodeCSVValue = "csv_value"
)

func (e *RowError) Error() string {
	if e.Field == "" {
		return e.Code + ": " + e.Message
	}
	return fmt.Sprintf("%s: field %q: %s", e.Code, e.Field, e.Message)
}

// ClusteringRange is a range of rows within one partition, as a Cassandra range tombstone gives
// it: the rows whose clustering columns compare between Start and End.
type ClusteringRange struct{ Start, End ClusteringBound }

// ClusteringBound is one end of a ClusteringRange: values of the first len(Cols) clustering
// columns (source column indices, in any order: the mapping's key gives the clustering order),
// whether each is DESC in the table's clustering order (Start and End follow that order), and
// whether the rows equal to that prefix are in the range. No columns: the partition's edge.
type ClusteringBound struct {
	Cols      []int
	Vals      []Value
	Desc      []bool
	Inclusive bool
}

// KeyRange is a contiguous range of target keys: the first len(Prefix) key columns equal Prefix,
// and the next columns compare, as tuples, between Start and End.
type KeyRange struct {
	Prefix     []Value
	Start, End KeyBound
}

// KeyBound is one end of a KeyRange: values of the key columns after the prefix, in key order.
type KeyBound struct {
	Vals      []Value
	Inclusive bool
}

// Row is one target row: Values follow the TargetSchema order (key columns first) and Region
// is the index of the pre-split region that holds it.
type Row struct {
	Values []Value
	Region int
	// Times, when not nil, holds each column's cell write time in epoch milliseconds (Times[i]
	// for Values[i]; 0: none, the writer's time): a mapping with target.write_time carries the
	// source's write times (Cassandra's WRITETIME()) as the target's cell timestamps.
	Times []int64
}

// Source produces batches. Run sends batches to out until the input is exhausted (nil), ctx is
// cancelled (ctx.Err()), or the source fails. resume holds per-stream cursors from a checkpoint
// (nil on a fresh run); streams whose cursor is marked done must be skipped.
type Source interface {
	Run(ctx context.Context, resume map[string]StreamState, out chan<- Batch) error
}

// StreamState is a stream's progress as a checkpoint records it.
type StreamState struct {
	Cursor string `json:"cursor"`
	Done   bool   `json:"done,omitempty"`
}

// Sizer is implemented by sources that know, or can estimate, how many rows they will produce
// (for the progress bar's ETA). It returns -1 when unknown.
type Sizer interface {
	EstimatedRows() int64
}

// WholeSizer is implemented by a source reading a shard of its input whose Sample spreads over the
// whole input (so that every shard plans the same regions): the whole input's row estimate, for a
// plan sized by regions.size, which EstimatedRows (the shard's) would make for 1/N of the data.
type WholeSizer interface {
	WholeEstimatedRows() int64
}

// Sampler is implemented by sources that can read a representative sample cheaply, used to place
// region split keys by quantiles before the run. Records with Err set may be included.
type Sampler interface {
	Sample(ctx context.Context, n int) ([]Record, error)
}

// HeadSampler is implemented by a Sampler whose sample may be the first rows of its input (or of
// some of its files) rather than rows spread over it: a gzip file cannot be read from the middle.
// SamplesHead tells whether it is; a report then names its sample as the first rows it reads.
type HeadSampler interface {
	SamplesHead() bool
}

// SampleDescriber is implemented by a Sampler whose sample is drawn in a way "rows spread over
// the input" does not describe (the first rows of slices of a Cassandra ring): DescribeSample
// says how a sample of rows rows was drawn, for a report to name it.
type SampleDescriber interface {
	DescribeSample(rows int) string
}

// Rereader is implemented by sources whose Run, called again, reads the same rows in the same
// order (files, generated data; not stdin, streams or live tables). The report reads such a
// source a second time, only when keys collide, rather than keep every row's values on disk.
type Rereader interface {
	Rereadable() bool
}

// BatchSampler is a Sampler whose sample keeps what batches carry besides their records: each
// record's stream, its write time (Batch.WriteTimes, when the source fills them) and
// SaltOrigin, so that a report over a sample judges the write order by the same evidence as a
// report over everything.
type BatchSampler interface {
	SampleBatches(ctx context.Context, n int) ([]Batch, error)
}

// SampleRecords are the records of a BatchSampler's sample, in order.
func SampleRecords(bs []Batch) []Record {
	var out []Record
	for _, b := range bs {
		out = append(out, b.Records...)
	}
	return out
}

// Sink receives target rows. Write may block (back-pressure) and must be safe for concurrent use
// by the transform workers. Commit makes every row written so far durable (close each open file,
// fsync, rename to its final name, fsync the directory) and returns the files it committed;
// only after Commit returns may the pipeline checkpoint or acknowledge the source. Abort removes
// temporary files and leaves committed ones; its ctx carries the cleanup's I/O, so a run that
// failed by cancellation gives one that is not cancelled. Write must not keep the rows, or
// strings of their values, once it returns: it copies what it buffers (the source reuses the
// memory).
type Sink interface {
	Write(ctx context.Context, rows []Row) error
	Commit(ctx context.Context) ([]FileInfo, error)
	Abort(ctx context.Context) error
}

// RowReject is one row a Sink's Write did not write because a value does not fit its column.
type RowReject struct {
	Index int // position in the rows passed to Write
	Err   *RowError
}

// RowRejects is returned by Sink.Write when some rows were rejected and every other row was
// written. It is not a failure of the run: the pipeline turns each entry into a reject.
type RowRejects struct{ Rows []RowReject }

func (e *RowRejects) Error() string {
	if len(e.Rows) == 1 {
		return fmt.Sprintf("row %d rejected: %v", e.Rows[0].Index, e.Rows[0].Err)
	}
	return fmt.Sprintf("%d rows rejected, first row %d: %v", len(e.Rows), e.Rows[0].Index, e.Rows[0].Err)
}

// FileInfo describes one committed data file.
type FileInfo struct {
	Region int    `json:"region"`
	Path   string `json:"path"` // relative to the output directory, slash-separated
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	// NewestTime is, for a file of a time slice (output.SliceFilePrefix), the newest cell write
	// time (epoch milliseconds) of the rows of its slice written up to the Commit that returned
	// it: the slice's bulkload job stamps its cells with the newest over its files. 0: none.
	NewestTime int64 `json:"newest_time,omitempty"`
}

// InvalidUTF8At is the byte offset of the first byte of s that is not part of valid UTF-8, or -1
// when s is valid: what an encoding reject names.
func InvalidUTF8At(s string) int {
	if utf8.ValidString(s) {
		return -1
	}
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 {
			return i
		}
		i += w
	}
	return -1
}

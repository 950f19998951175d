package kafka

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cqlvalue"
)

// Op is what a change does to the target table.
type Op uint8

const (
	OpUpsert Op = iota + 1 // write the row (Lindorm UPSERT semantics)
	OpDelete               // delete the row whose key the values give
	// OpRangeDelete deletes the rows of a partition whose clustering columns fall in Range
	// (Debezium's Cassandra range tombstone): Values hold the partition key cells.
	OpRangeDelete
)

func (o Op) String() string {
	switch o {
	case OpUpsert:
		return "upsert"
	case OpDelete:
		return "delete"
	case OpRangeDelete:
		return "range delete"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Reject codes of the Kafka decoder, besides pipeline's parse and type.
const (
	// CodeUnsupported: a Debezium event rekey does not replicate (truncate "t", message "m").
	CodeUnsupported = "unsupported"
	// CodeDelete: a delete event read by a source that writes upserts only (report, migrate).
	CodeDelete = "delete"
	// CodeUnknownColumn: a Cassandra change event writes a cell of a column the mapping's
	// source.columns does not declare (one added to the table since): its value would be lost.
	CodeUnknownColumn = "unknown_column"
	// CodeCollectionUpdate: a Cassandra UPDATE event sets a non-frozen collection, whose cell
	// holds only the elements the update wrote, not the collection it leaves.
	CodeCollectionUpdate = "collection_update"
)

// Change is one effect of a message on the target table. Values follow the source schema; a
// delete has the fields its message carries (the key, the before image), the others null. An
// update whose event carries the old row (Debezium "before") has it in Before, so that the
// caller can delete the old key when the mapping gives it a different target key.
type Change struct {
	Op     Op
	Values []pipeline.Value
	Before []pipeline.Value
	// BeforeFromKey: the update's event has no before image (PostgreSQL's REPLICA IDENTITY
	// DEFAULT), so Before holds the columns its message key gives, the others null
	BeforeFromKey bool
	Err           *pipeline.RowError // the message cannot be decoded: reject it (Op is 0)
	// Set, when not nil, names the columns the change sets (Values[i] counts when Set[i]): the
	// Cassandra connector's events carry only the cells the mutation wrote. nil: a whole row. On
	// a delete it names the key cells the delete carries: the Cassandra connector's delete of a
	// whole partition has the partition key cells, and null clustering cells.
	Set []bool
	// Range is the clustering range of an OpRangeDelete.
	Range *pipeline.ClusteringRange
	// WriteTime is the Cassandra write time of the mutation in epoch milliseconds (the
	// connector's source.ts_us, else source.ts_ms: the partition update's newest cell
	// timestamp; a delete's is its cells' deletion_ts), 0 when the event has none (other
	// connectors, events without a source).
	WriteTime int64
	// AfterNewerWrite, on an OpRangeDelete, is the write time (epoch ms) of the newest row its
	// mutation wrote, when that is newer than the range delete's own and the connector published
	// the row first (0: none). Cassandra keeps such a row, and it may lie in the range: the
	// delete applied after it would remove it.
	AfterNewerWrite int64
	// Repeat marks an event Debezium's Cassandra connector published before (Decoder.SkipRepeats):
	// nothing to apply.
	Repeat bool
	// PrimaryKey, on an upsert or a delete of Debezium's Cassandra connector, names the columns
	// of the table's primary key (those its message key names; nil: unknown): a target key
	// computed from another column cannot be replicated, since no event carries the old row.
	PrimaryKey []bool
	// OtherTable names the table of a Debezium event that is not the mapping's (its
	// source.db/schema/table, or source.keyspace/table of the Cassandra connector: "db.table",
	// "schema.table", "keyspace.table"), or of the tombstone that follows such a delete: nothing
	// is to apply. TableErr is set with it when the mapping does not state its table
	// (Decoder.Table): the topic carries several tables, and the read is to stop.
	OtherTable string
	TableErr   error
	// TTLCells, on an upsert of Debezium's Cassandra connector, counts the cells it writes with a
	// TTL of their own (USING TTL: a value with its expiry in deletion_ts), which replicate does
	// not apply.
	TTLCells int
	// Tombstone marks the delete of a null-value message, whose values come from the key only.
	// Debezium sends one after every delete event, so in that format it is redundant.
	Tombstone bool
	// Offset is the offset of the message the change comes from, and Key and Value are its
	// bytes (Value nil for a null value), for a rejects line: set by Changes, which gives
	// each message exactly one change; Decode leaves them zero.
	Offset     int64
	Key, Value []byte
}

// Decoder turns messages into changes. Values alias the message bytes passed to Decode (and the
// decoder's slab): keep the messages and call Reset only when the changes are consumed. A Decoder
// is not safe for concurrent use.
type Decoder struct {
	format string
	names  []string
	types  []cqlvalue.Type
	index  map[string]int // for wide schemas; nil: linear search
	keyCol int            // column a non-object message key fills, or -1
	hint   int            // the column the next member probably names

	// types are those the event being read is read by: declared, the mapping's, or msTypes,
	// the same with epoch milliseconds for a timestamp without a unit (nil when there is none),
	// for the events of Debezium's Cassandra connector, which writes a timestamp as Cassandra
	// holds it (epoch milliseconds) and the cassandra:// source reads it
	declared, msTypes []cqlvalue.Type
	// cassUnit names the column whose timestamps a unit other than milliseconds is declared for
	// (-1: none), which the Cassandra connector's events cannot be read in
	cassUnit int

	// folds finds a JSON row's member that names a column only ignoring case (nil for
	// Debezium's events, whose members are the table's exact column names); foldWarned holds
	// the member names Logger was told of
	folds      cqlvalue.FoldIndex
	foldWarned map[string]struct{}
	trackExact bool              // a member was read ignoring case: exact members are recorded
	folded     []cqlvalue.Folded // a row's members read ignoring case (reused)
	// Logger, when set, is told once per member name read ignoring case.
	Logger *zap.Logger

	arena *Arena // where the changes' values and masks go: own, or UseArena's
	own   Arena
	// mark, when set, records the columns fields() finds in a document (a Cassandra event's
	// set cells); cells counts the Cassandra cells it unwrapped
	mark  []bool
	cells int
	// unknown, while mark is set, is the first Cassandra cell fields() found of a column the
	// schema lacks
	unknown string

	// Debezium schema cache: the last envelope schema seen and the per-column time unit it gives
	// a timestamp column (io.debezium.time.Timestamp and Connect's Timestamp ms, MicroTimestamp
	// us, NanoTimestamp ns, io.debezium.time.Date and Connect's Date unitDays; 0 when none).
	lastSchema string
	scale      []cqlvalue.TimeUnit
	scaleAny   bool
	// decScale is, per column, decimalBias + the scale of an org.apache.kafka.connect.data.Decimal
	// the envelope schema gives it, or variableScale, or stringBytes (0: none; nil: no column has one)
	decScale []int
	// the same of the last wrapped message key's schema (keyScale nil: no time column;
	// keyDecScale nil: no decimal column)
	lastKeySchema string
	keyScale      []cqlvalue.TimeUnit
	keyDecScale   []int
	// the same of the last wrapped message key that is one value (keycol=): decimalBias + the
	// scale of its Decimal, or 0
	lastScalarSchema string
	scalarKeyDec     int

	// SkipRepeats marks the Cassandra connector's events that repeat ones already decoded (see
	// repeats), counting them in Repeats: set it on a decoder of one partition's messages in
	// order. Decode then returns a change with Repeat set and nothing else for such a message.
	SkipRepeats bool
	Repeats     int64
	logs        commitLogs
	id          []byte // eventID's buffer
	seed        maphash.Seed
	// unavail lists the columns of the image being read whose value is Debezium's placeholder of
	// an unavailable value (left null)
	unavail []int
	// ttlCells counts the Cassandra cells of the image being read that carry a value and an
	// expiry (written with a TTL)
	ttlCells int
	// flatDelete: the JSON row being read has "__deleted": "true", which Debezium's
	// ExtractNewRecordState writes into the row a delete leaves (delete.tombstone.handling.mode
	// rewrite): the row is deleted, not written
	flatDelete bool
	// lackWarned: the columns warnLacking told of
	lackWarned []bool
	// undeclaredWarned: the columns of relational events warnUndeclared told of
	undeclaredWarned map[string]struct{}
	// relational: the event being read names another connector than Cassandra's in
	// source.connector, so a JSON object in it is a column's value (a PostgreSQL hstore in map
	// mode), never a Cassandra cell to unwrap
	relational bool
	// timeTypes names, per column marked unitNotInstant, the schema's type (for the reject)
	timeTypes map[int]string
	// connectRow: a JSON row Kafka Connect's JsonConverter wrapped with its schema is being read.
	// The last such schema (rowSchema) gives the per-column time units (rowScale, nil: none),
	// decimal scales (rowDec, as decScale) and the blob columns it gives as bytes, which the
	// converter writes as base64 (rowBytes, nil: none)
	connectRow bool
	rowSchema  string
	rowScale   []cqlvalue.TimeUnit
	rowDec     []int
	rowBytes   []bool
	// pk names the columns of the Cassandra table's primary key, as the first message key of
	// its connector's events gave them (nil: none seen yet)
	pk []bool
	// the commit log position of the last Cassandra event, and the newest write time (µs) of
	// the rows its mutation wrote, as published so far
	mutFile   string
	mutPos    int64
	mutNewest int64

	// Table is the table of a Debezium topic the mapping reads (its source.table: "db.table",
	// "schema.table", "db.schema.table" or "keyspace.table"): an event of another table is not
	// applied (Change.OtherTable). "": the first event that names its table fixes it (in Tables),
	// and an event of another table is refused (Change.TableErr).
	Table string
	// Tables holds the table the first event named, when Table is "": shared by the decoders of
	// one topic's partitions (nil: the decoder's own).
	Tables *TableSeen
	// otherDeletes holds the message keys of the deletes of other tables whose tombstone has not
	// come yet, with their table: the tombstone names no table, and its key is another table's.
	otherDeletes map[string]string
}

// TableSeen is the table the first event of a topic named, shared by the decoders of its
// partitions.
type TableSeen struct{ p atomic.Pointer[string] }

// Name is the table seen first ("": none yet).
func (t *TableSeen) Name() string {
	if p := t.p.Load(); p != nil {
		return *p
	}
	return ""
}

// maxOtherDeletes bounds Decoder.otherDeletes: Debezium sends a delete's tombstone right after
// it, so only a topic without tombstones (tombstones.on.delete=false) fills it.
const maxOtherDeletes = 4096

// commitLogs remembers, per commit log segment of a node, the position of the last event the
// decoder passed and the events at that position, each by its message key and "after" (one
// mutation of several rows, or of several ranges of a partition, is several events at one
// position; the ranges' events have one key).
type commitLogs struct {
	seg   map[string]*segmentMark
	order []string // segments in the order first seen, to forget the oldest
}

type segmentMark struct {
	pos  int64
	keys map[string]struct{}
}

// keepSegments is how many commit log segments a decoder remembers positions of: the connector
// repeats events of the segment it is reading (and of the one before, at a segment's end).
const keepSegments = 16

// repeats tells whether the event at (file, pos) with message key was passed already. Debezium's
// Cassandra connector reads each commit log segment in order, and publishes again a run of events
// it published already when it reads a segment a second time (after a restart, or once the node
// marks the segment complete, from the last offset it had flushed): such a run, applied after
// newer events of the same keys, would undo them. Within one segment, in one partition, events
// arrive in position order, so an event at or before the last position passed is a repeat, unless
// it is another event of the mutation at that very position (ev: its message key and "after").
// Segments are named after the node's commit log ids: those of other replicas are other names,
// tracked apart.
func (c *commitLogs) repeats(file string, pos int64, ev []byte) bool {
	if c.seg == nil {
		c.seg = map[string]*segmentMark{}
	}
	m := c.seg[file]
	switch {
	case m == nil:
		if len(c.order) == keepSegments {
			delete(c.seg, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, file)
		c.seg[file] = &segmentMark{pos: pos, keys: map[string]struct{}{string(ev): {}}}
		return false
	case pos > m.pos:
		m.pos = pos
		clear(m.keys)
		m.keys[string(ev)] = struct{}{}
		return false
	case pos < m.pos:
		return true
	}
	if _, ok := m.keys[string(ev)]; ok {
		return true
	}
	m.keys[string(ev)] = struct{}{}
	return false
}

// eventID is what tells apart the events of one mutation: the message key, and a hash of
// "after", which holds a range tombstone's bounds (every range of a partition has the
// partition's key). A hash, not "after" itself: the position's set holds a copy of each.
func (d *Decoder) eventID(key []byte, after string) []byte {
	d.id = binary.LittleEndian.AppendUint64(append(d.id[:0], key...), maphash.String(d.seed, after))
	return d.id
}

// ErrSchema marks NewDecoder's refusals of a mapping's source columns (none, a type the format
// cannot read, a counter from Debezium's Cassandra connector, an unknown keycol): the mapping or
// the URI is to change, and the same command fails again.
var ErrSchema = errors.New("kafka: the source columns do not fit the topic's format")

// schemaError is a refusal of NewDecoder: its own message, and ErrSchema.
type schemaError struct{ err error }

func (e schemaError) Error() string   { return e.err.Error() }
func (e schemaError) Unwrap() []error { return []error{e.err, ErrSchema} }

// NewDecoder returns a decoder for the configured format into the schema's columns.
func NewDecoder(cfg Config, schema pipeline.SourceSchema) (*Decoder, error) {
	d, err := newDecoder(cfg, schema)
	if err != nil {
		return nil, schemaError{err}
	}
	return d, nil
}

func newDecoder(cfg Config, schema pipeline.SourceSchema) (*Decoder, error) {
	if len(schema) == 0 {
		return nil, fmt.Errorf("kafka: the mapping declares no source columns (source.columns)")
	}
	d := &Decoder{format: cfg.Format, keyCol: -1, seed: maphash.MakeSeed()}
	d.arena = &d.own
	if d.format == "" {
		d.format = FormatJSON
	}
	if d.format != FormatJSON && d.format != FormatDebezium {
		return nil, fmt.Errorf("kafka: format %q: want json or debezium", d.format)
	}
	for _, c := range schema {
		if strings.EqualFold(strings.TrimSpace(c.Type), "counter") {
			if d.format == FormatDebezium {
				return nil, fmt.Errorf("kafka: column %q is a Cassandra counter: Debezium's Cassandra connector publishes no events of a counter table "+
					"(it skips them), so there is nothing to replicate: copy the table again with migrate instead", c.Name)
			}
			c.Type = "bigint" // a counter's value, as the Cassandra source reads it
		}
		t, err := cqlvalue.ParseType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("kafka: column %q: %w", c.Name, err)
		}
		d.names = append(d.names, c.Name)
		d.types = append(d.types, t)
	}
	d.declared, d.cassUnit = d.types, -1
	for i, t := range d.types {
		if d.cassUnit < 0 && notMillis(t) {
			d.cassUnit = i
		}
		if ms := t.WithTimestampUnit(cqlvalue.UnitMillis); ms.String() != t.String() {
			if d.msTypes == nil {
				d.msTypes = slices.Clone(d.types)
			}
			d.msTypes[i] = ms
		}
	}
	if d.format == FormatJSON {
		d.folds = cqlvalue.NewFoldIndex(d.names)
	}
	if len(d.names) > 16 {
		d.index = make(map[string]int, len(d.names))
		for i, n := range d.names {
			d.index[n] = i
		}
	}
	if cfg.KeyColumn != "" {
		if d.keyCol = schema.Index(cfg.KeyColumn); d.keyCol < 0 {
			return nil, fmt.Errorf("kafka: keycol=%s: no such source column (columns: %s)", cfg.KeyColumn, strings.Join(schema.Names(), ", "))
		}
	}
	return d, nil
}

// Arena holds the values and column masks of the changes a decoder decodes: they stay valid
// until the arena's Reset. A decoder has its own (Decoder.Reset recycles the one in use); one
// that decodes the next batch while the changes of earlier ones are still being applied gives
// each batch an arena of its own (UseArena).
type Arena struct {
	slab    []pipeline.Value
	used    int
	setSlab []bool
}

// Reset recycles the arena: the values of the changes decoded into it become invalid.
func (a *Arena) Reset() { a.used = 0; a.setSlab = a.setSlab[:0] }

// UseArena makes the decoder put the changes it decodes next into a (nil: its own arena).
func (d *Decoder) UseArena(a *Arena) {
	if a == nil {
		a = &d.own
	}
	d.arena = a
}

// Reset recycles the arena in use: Values of earlier changes become invalid.
func (d *Decoder) Reset() { d.arena.Reset() }

// allocSet returns a cleared column mask; earlier masks stay valid until Reset.
func (d *Decoder) allocSet() []bool {
	a, n := d.arena, len(d.names)
	if len(a.setSlab)+n > cap(a.setSlab) {
		a.setSlab = make([]bool, 0, max(1024*n, 2*cap(a.setSlab)))
	}
	a.setSlab = a.setSlab[:len(a.setSlab)+n]
	m := a.setSlab[len(a.setSlab)-n:]
	clear(m)
	return m
}

func (d *Decoder) alloc() []pipeline.Value {
	a, n := d.arena, len(d.names)
	if a.used+n > len(a.slab) {
		// a new slab; the old one stays referenced by earlier changes until Reset
		a.slab = make([]pipeline.Value, max(1024*n, 2*len(a.slab)))
		a.used = 0
	}
	v := a.slab[a.used : a.used+n : a.used+n]
	a.used += n
	clear(v)
	return v
}

func (d *Decoder) column(name string) int {
	// members usually come in the same order in every message: try the one after the last match
	if h := d.hint; h < len(d.names) && d.names[h] == name {
		d.hint++
		return h
	}
	i := d.lookup(name)
	if i >= 0 {
		d.hint = i + 1
	}
	return i
}

func (d *Decoder) lookup(name string) int {
	if d.index != nil {
		if i, ok := d.index[name]; ok {
			return i
		}
		return -1
	}
	for i, n := range d.names {
		if n == name {
			return i
		}
	}
	return -1
}

// maybeWrapped tells whether a document may be Kafka Connect's {"schema": ..., "payload": ...}
// wrapping: its first member is one of the two (the JSON converter writes schema first).
func maybeWrapped(doc string) bool {
	i := 0
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	if i >= len(doc) || doc[i] != '{' {
		return false
	}
	for i++; i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r'); i++ {
	}
	rest := doc[i:]
	return strings.HasPrefix(rest, `"schema"`) || strings.HasPrefix(rest, `"payload"`)
}

// isNullDoc tells whether a value is the JSON literal null, which counts as a tombstone.
func isNullDoc(v []byte) bool { return len(v) <= 8 && strings.TrimSpace(str(v)) == "null" }

func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// flatDeletedMember is the member Debezium's ExtractNewRecordState adds to a flattened row under
// delete.tombstone.handling.mode rewrite: "true" in the row a delete leaves, "false" otherwise
// (whatever add.fields.prefix is). A mapping with a column of that name reads it as data.
const flatDeletedMember = "__deleted"

// Decode appends the change of one message (nil value: a tombstone) to dst: exactly one, an error
// included.
func (d *Decoder) Decode(dst []Change, key, value []byte) []Change {
	if d.format == FormatDebezium {
		return d.debezium(dst, key, value)
	}
	if len(value) == 0 || isNullDoc(value) {
		return append(dst, d.tombstone(key))
	}
	vals := d.alloc()
	doc := str(value)
	rowDoc := doc // the object that holds the row: doc, or its payload
	d.flatDelete, d.unavail = false, d.unavail[:0]
	var rerr *pipeline.RowError
	if maybeWrapped(doc) {
		var schemaRaw, payloadRaw string
		members := 0
		rerr = d.fields(doc, vals, nil, func(name, raw string) {
			members++
			switch name {
			case "schema":
				schemaRaw = raw
			case "payload":
				payloadRaw = raw
			}
		})
		if members == 2 && schemaRaw != "" && strings.HasPrefix(payloadRaw, "{") {
			// Kafka Connect's JsonConverter with schemas.enable: the row is the payload.
			clear(vals)
			d.unavail = d.unavail[:0]
			rowDoc = payloadRaw
			// its schema's logical types say how to read the fields, as in a Debezium event
			scale := d.useRowSchema(schemaRaw)
			valueScales := d.decScale
			d.connectRow, d.decScale = true, d.rowDec
			rerr = d.fields(payloadRaw, vals, scale, nil)
			d.connectRow, d.decScale = false, valueScales
		}
	} else {
		rerr = d.fields(doc, vals, nil, nil)
	}
	if rerr == nil && !d.anyValue(vals) {
		rerr = d.noColumns(rowDoc) // checked only when every value is null: rare, so off the hot path
	}
	if rerr != nil {
		return append(dst, Change{Err: rerr})
	}
	if len(key) > 0 && d.anyNull(vals) {
		// key fields fill what the value leaves null; a bad key does not spoil a good value
		d.fillFromKey(vals, key)
	}
	if d.flatDelete {
		return append(dst, Change{Op: OpDelete, Values: vals})
	}
	ch := Change{Op: OpUpsert, Values: vals}
	if len(d.unavail) > 0 {
		// a Debezium event's row as ExtractNewRecordState flattens it: the columns Debezium
		// could not read keep their values, the change sets the others
		ch.Set = d.unavailableSet(vals)
	}
	return append(dst, ch)
}

func (d *Decoder) anyValue(vals []pipeline.Value) bool {
	for _, v := range vals {
		if v.Kind != pipeline.KindNull {
			return true
		}
	}
	return false
}

// noColumns refuses a JSON object none of whose members is a column of the mapping (a Debezium
// envelope read with format=json, say): upserting it would write a row of nulls around a key
// taken from the message key, silently. An object naming a column, even as null, is a row.
func (d *Decoder) noColumns(doc string) *pipeline.RowError {
	var names []string
	matched := false
	cqlvalue.ObjectFields(doc, func(name, _ string) {
		if d.column(name) >= 0 {
			matched = true
		} else if len(names) < 5 {
			names = append(names, name)
		}
	})
	if matched || len(names) == 0 {
		return nil
	}
	msg := fmt.Sprintf("none of the mapping's columns is in the message (its members: %s)", strings.Join(names, ", "))
	if slices.Contains(names, "before") || slices.Contains(names, "after") || slices.Contains(names, "op") {
		msg += ": a Debezium change event? read the topic with format=debezium"
	}
	return &pipeline.RowError{Code: pipeline.CodeParse, Message: msg}
}

func (d *Decoder) anyNull(vals []pipeline.Value) bool {
	for _, v := range vals {
		if v.Kind == pipeline.KindNull {
			return true
		}
	}
	return false
}

// fields parses the JSON object doc into vals (columns by member name). other, when set, sees
// every member. In Debezium mode cells written as Cassandra's {"value": v, "deletion_ts": .., "set":
// ..} are unwrapped, unless the event names another connector (d.relational).
func (d *Decoder) fields(doc string, vals []pipeline.Value, scale []cqlvalue.TimeUnit, other func(name, raw string)) *pipeline.RowError {
	var rerr *pipeline.RowError
	d.hint = 0
	// members that name a column only ignoring case are read after the row's exact ones, which
	// win: exact records those, once the decoder has met such a member (trackExact)
	var exact cqlvalue.FoldSeen
	// the columns a member of a JSON row named (of the first MaxFolded): a second one is a
	// guess between two values, as in a JSON Lines row
	var named cqlvalue.FoldSeen
	folded := d.folded[:0]
	again := false // reading the row again: other has seen its members
	member := func(name, raw string, sc cqlvalue.Scanned) {
		if other != nil && !again {
			other(name, raw)
		}
		ci := d.column(name)
		if ci >= 0 && isUnavailable(raw) { // also in a row ExtractNewRecordState flattened
			d.unavail = append(d.unavail, ci) // not the column's value: left null, and unset
			return
		}
		if ci < 0 {
			if d.format == FormatJSON && name == flatDeletedMember {
				d.flatDelete = raw == `"true"`
				return
			}
			if d.folds != nil { // JSON rows: a member naming a column only ignoring case
				if ci = d.folds.Column(name); ci >= 0 {
					folded = append(folded, cqlvalue.Folded{Name: name, Raw: raw, Scanned: sc, Column: ci})
				}
				return
			}
			if d.relational && d.mark != nil && d.Logger != nil {
				d.warnUndeclared(name)
			}
			if d.mark != nil && d.unknown == "" && d.format == FormatDebezium && !d.relational && len(raw) > 0 && raw[0] == '{' {
				if _, _, ok := cassandraCell(raw); ok {
					d.unknown = strings.Clone(name)
				}
			}
			return
		}
		if d.trackExact {
			exact.Mark(ci)
		}
		if d.format == FormatJSON {
			if named.Has(ci) {
				if rerr == nil {
					rerr = cqlvalue.NamedTwice(d.names[ci], "fix the message where it was produced")
				}
				return
			}
			named.Mark(ci)
		}
		if d.format == FormatDebezium && !d.relational && len(raw) > 0 && raw[0] == '{' {
			if v, expires, ok := cassandraCell(raw); ok {
				raw, sc = v, cqlvalue.ScannedOther // the cell's value: not what the scan saw
				d.cells++
				if expires && v != "null" {
					d.ttlCells++
				}
			}
		} else if d.format == FormatDebezium && raw == "null" && d.mark != nil && !d.relational {
			// Debezium's Cassandra connector names every column of the table: one the mutation
			// did not write is a bare null, a cell it wrote (null too) is a cell object. Another
			// connector's null is the column's value.
			return
		}
		if d.mark != nil {
			d.mark[ci] = true
		}
		var v pipeline.Value
		var err error
		if scale != nil && scale[ci] != 0 {
			v, err = d.scaledTimestamp(ci, raw, scale[ci])
		} else if k := d.types[ci].Kind; d.format == FormatDebezium && ((k == cqlvalue.Decimal || k == cqlvalue.Varint) && raw[0] == '{' ||
			k != cqlvalue.Blob && d.decScale != nil && (raw[0] == '"' && d.decScale[ci] > 0 || raw[0] == '{' && d.decScale[ci] == variableScale)) {
			// the schema says the value is a decimal's bytes, whatever type the mapping declares
			// the column (a NUMERIC(10,0) as bigint, a NUMERIC as text): read as the number,
			// never as the base64 text or the VariableScaleDecimal's JSON itself
			v, err = d.bytesDecimal(ci, raw)
		} else if d.connectRow && k != cqlvalue.Blob && d.decScale != nil && (raw[0] == '"' && d.decScale[ci] > 0 || raw[0] == '{' && d.decScale[ci] == variableScale) {
			// a Kafka Connect Decimal of a wrapped JSON row, or a VariableScaleDecimal of a
			// Debezium event's row ExtractNewRecordState flattened
			v, err = d.bytesDecimal(ci, raw)
		} else if (d.format == FormatDebezium || d.connectRow && d.rowBytes != nil && d.rowBytes[ci]) && k == cqlvalue.Blob && raw[0] == '"' {
			if d.decScale != nil && d.decScale[ci] == stringBytes {
				v, err = stringBlob(raw)
			} else {
				v, err = connectBytes(raw)
			}
		} else {
			v, err = d.types[ci].FromScanned(raw, sc)
		}
		if err != nil {
			if rerr == nil {
				msg := err.Error()
				if k := d.types[ci].Kind; (d.format == FormatDebezium || d.format == FormatJSON && !d.connectRow && isBase64(raw)) &&
					(k == cqlvalue.Decimal || k == cqlvalue.Varint) && raw[0] == '"' {
					// a JSON row too: a Debezium event ExtractNewRecordState flattened
					if nonFinite(raw) {
						msg += nonFiniteDecimalHint
					} else {
						msg += unscaledDecimalHint
					}
				}
				rerr = &pipeline.RowError{Code: cqlvalue.ErrorCode(err), Field: d.names[ci], Message: msg}
			}
			return
		}
		vals[ci] = v
	}
	if err := cqlvalue.ObjectMembers(doc, member); err != nil {
		return &pipeline.RowError{Code: pipeline.CodeParse, Message: "invalid JSON: " + err.Error()}
	}
	if len(folded) > 0 {
		again = true
		if !d.trackExact {
			// the first such member this decoder meets: exact members were not recorded, so the
			// row is read again, recording them (only JSON rows fold: nothing else of the
			// decoder's state changes on a second reading)
			d.trackExact = true
			clear(vals)
			rerr, folded, named = nil, folded[:0], cqlvalue.FoldSeen{}
			cqlvalue.ObjectMembers(doc, member) // read once without an error
		}
		exactOnly := exact // the folded members read next mark theirs too
		for _, f := range folded {
			if !exactOnly.Has(f.Column) { // the row's exact member, even null, wins
				member(d.names[f.Column], f.Raw, f.Scanned)
				d.warnFolded(f.Name, f.Column)
			}
		}
		d.folded = folded[:0] // kept for the next rows: they alias this message, which the caller keeps
	}
	return rerr
}

// warnLacking says once per column that a relational event lacks a column the mapping declares
// (set false, not for Debezium's placeholder of a value it could not read): left out by the
// connector's column.exclude.list, or a name the table does not have, whose values replicate then
// never sets.
func (d *Decoder) warnLacking(set []bool) {
	if d.Logger == nil {
		return
	}
	for i, ok := range set {
		if ok || slices.Contains(d.unavail, i) {
			continue
		}
		if d.lackWarned == nil {
			d.lackWarned = make([]bool, len(d.names))
		}
		if !d.lackWarned[i] {
			d.lackWarned[i] = true
			d.Logger.Warn("the events do not name a column the mapping declares, so replicate leaves its values as they are: "+
				"left out by the connector (column.exclude.list), or not the table's column name (check source.columns)",
				zap.String("column", d.names[i]))
		}
	}
}

// warnUndeclared says once per column that a relational event's row names a column the mapping
// does not declare (one added to the table since, say): its values are not replicated.
func (d *Decoder) warnUndeclared(name string) {
	if _, seen := d.undeclaredWarned[name]; seen {
		return
	}
	if d.undeclaredWarned == nil {
		d.undeclaredWarned = map[string]struct{}{}
	}
	d.undeclaredWarned[strings.Clone(name)] = struct{}{} // name aliases the message
	d.Logger.Warn("the events name a column the mapping does not declare (added to the table since?): its values are not replicated. "+
		"To replicate it, add it to source.columns (and to the target table), then copy the table again (its rows written so far lack it)",
		zap.String("column", name))
}

// warnFolded says once per member name that a member naming a column only ignoring case is read
// as that column.
func (d *Decoder) warnFolded(member string, ci int) {
	if _, seen := d.foldWarned[member]; seen || d.Logger == nil {
		return
	}
	if d.foldWarned == nil {
		d.foldWarned = map[string]struct{}{}
	}
	d.foldWarned[strings.Clone(member)] = struct{}{} // member aliases the message
	d.Logger.Warn("a JSON member that names a declared column only ignoring case is read as that column (a member of its exact name wins)",
		zap.String("member", member), zap.String("column", d.names[ci]))
}

// useRowSchema reads the logical types of a JsonConverter row schema (cached: the converter
// repeats it in every message) and returns the time units of its fields (nil: none).
func (d *Decoder) useRowSchema(schema string) []cqlvalue.TimeUnit {
	if schema == d.rowSchema {
		return d.rowScale
	}
	d.rowSchema, d.rowScale, d.rowDec, d.rowBytes = strings.Clone(schema), nil, nil, nil
	var s connectSchema
	if json.Unmarshal([]byte(schema), &s) != nil {
		return nil
	}
	if scale := make([]cqlvalue.TimeUnit, len(d.names)); d.timeUnits(s.Fields, scale) {
		d.rowScale = scale
	}
	d.rowDec = d.decimalScales(s.Fields, nil)
	for _, f := range s.Fields {
		if ci := d.lookup(f.Field); ci >= 0 && f.Type == "bytes" && d.types[ci].Kind == cqlvalue.Blob {
			if d.rowBytes == nil {
				d.rowBytes = make([]bool, len(d.names))
			}
			d.rowBytes[ci] = true
		}
	}
	return d.rowScale
}

// connectBytes reads a blob of a Debezium event: Kafka Connect's JSON converter writes bytes as
// base64, always. The sources' blob text (cqlvalue) also takes 0x-prefixed hex, which base64 of
// some bytes begins with ("0x01" is d3 1d 35): read so, it would be other bytes, or none.
func connectBytes(raw string) (pipeline.Value, error) {
	s, ok := unquoteSimple(raw)
	if !ok {
		return pipeline.Null, fmt.Errorf("invalid blob %.40s: not a JSON string", raw)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return pipeline.Null, fmt.Errorf("invalid blob %.40q: expected base64, as Kafka Connect's JSON converter writes bytes", s)
	}
	return pipeline.Value{Str: string(b), Kind: pipeline.KindBytes}, nil
}

// decimalBias is added to a Decimal's scale in Decoder.decScale, so that every scale, negative ones
// too (Decimal.builder takes any; an Oracle NUMBER(p,s) has s down to -84), marks it with a
// number above 0, apart from the marks below.
const decimalBias = 1 << 16

// variableScale marks in Decoder.decScale a column the schema gives an
// io.debezium.data.VariableScaleDecimal: its scale is beside its unscaled value.
const variableScale = -2

// stringBytes marks in Decoder.decScale a blob column whose schema field is a string, not bytes:
// Debezium's binary.handling.mode base64, base64-url-safe or hex, which give each a plain string
// schema (CommonConnectorConfig.BinaryHandlingMode), so the schema does not say which.
const stringBytes = -1

// stringBlob reads a blob the schema gives as a string (stringBytes): hex, base64 or URL-safe
// base64. Hex digits of an even count that are base64 too ("deadbeef") are refused: read as
// either, they would be other bytes than the other's.
func stringBlob(raw string) (pipeline.Value, error) {
	s, ok := unquoteSimple(raw)
	if !ok {
		return pipeline.Null, fmt.Errorf("invalid blob %.40s: not a JSON string", raw)
	}
	if b, err := hex.DecodeString(s); err == nil {
		if _, err := base64.StdEncoding.DecodeString(s); err == nil && s != "" {
			return pipeline.Null, fmt.Errorf("ambiguous blob %.40q: the schema gives the column as a string (binary.handling.mode base64, base64-url-safe or hex), and it reads both as hex and as base64: set binary.handling.mode=bytes", s)
		}
		return pipeline.Value{Str: string(b), Kind: pipeline.KindBytes}, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b, err = base64.URLEncoding.DecodeString(s); err != nil {
			return pipeline.Null, fmt.Errorf("invalid blob %.40q: expected hex or base64, as Debezium's binary.handling.mode writes bytes as a string", s)
		}
	}
	return pipeline.Value{Str: string(b), Kind: pipeline.KindBytes}, nil
}

// unscaledDecimalHint follows the error of a decimal text Debezium's event gives without the
// schema that would say it is bytes, and their scale.
const unscaledDecimalHint = ": if it is Debezium's exact decimal (base64 bytes, decimal.handling.mode=precise), its scale is only in the schema: set value.converter.schemas.enable=true, or decimal.handling.mode=string"

// isBase64 tells whether raw is a JSON string of standard base64, as Kafka Connect's
// JsonConverter writes bytes.
func isBase64(raw string) bool {
	s, ok := unquoteSimple(raw)
	if !ok || s == "" {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(s)
	return err == nil
}

// nonFiniteDecimalHint follows the error of a NaN or infinity Debezium's event gives a decimal
// column.
const nonFiniteDecimalHint = ": a decimal holds no NaN or infinity, which Debezium writes for a NUMERIC's special values under decimal.handling.mode=double or string: declare the column double, or text"

// nonFinite tells whether raw is the JSON string of a NaN or an infinity as Debezium writes them:
// "NAN" (decimal.handling.mode=string), or a double's "NaN", "Infinity", "-Infinity" (double).
func nonFinite(raw string) bool {
	switch raw {
	case `"NAN"`, `"NaN"`, `"Infinity"`, `"-Infinity"`, `"+Infinity"`:
		return true
	}
	return false
}

// bytesDecimal reads a decimal Debezium wrote as bytes (decimal.handling.mode=precise): the
// unscaled value, big-endian two's complement, base64; its scale beside it in a
// VariableScaleDecimal {"scale", "value"}, or in the envelope schema's
// org.apache.kafka.connect.data.Decimal (d.decScale).
func (d *Decoder) bytesDecimal(ci int, raw string) (pipeline.Value, error) {
	var b64 string
	var scale int
	if raw[0] == '{' {
		var vs struct {
			Scale *int    `json:"scale"`
			Value *string `json:"value"`
		}
		if err := json.Unmarshal([]byte(raw), &vs); err != nil || vs.Scale == nil || vs.Value == nil {
			return d.types[ci].FromJSON(raw) // not a VariableScaleDecimal: the type's own error
		}
		b64, scale = *vs.Value, *vs.Scale
	} else {
		var ok bool
		if b64, ok = unquoteSimple(raw); !ok {
			return pipeline.Null, fmt.Errorf("invalid JSON string %s", raw)
		}
		scale = d.decScale[ci] - decimalBias
	}
	return unscaledBytes(d.types[ci], b64, scale)
}

// maxDecimalScale bounds a decimal's scale, as the cassandra:// source bounds it and cqlvalue
// the exponent of decimal text.
const maxDecimalScale = 1000

// unscaledBytes reads a decimal as Kafka Connect's JsonConverter writes it: b64 the unscaled
// value, big-endian two's complement, times 10^-scale, into a column of type t.
func unscaledBytes(t cqlvalue.Type, b64 string, scale int) (pipeline.Value, error) {
	if scale > maxDecimalScale || scale < -maxDecimalScale {
		// its digits written out would be as many (a scale of 2^31, two billion zeros)
		return pipeline.Null, fmt.Errorf("invalid %s: decimal scale %d is outside ±%d (no Lindorm number holds it): fix the value where it was written", t.Kind, scale, maxDecimalScale)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) == 0 {
		return pipeline.Null, fmt.Errorf("invalid %s %q: Debezium's decimal bytes are base64 of the unscaled value", t.Kind, b64)
	}
	n := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 { // two's complement
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	digits := n.String()
	neg := strings.HasPrefix(digits, "-")
	digits = strings.TrimPrefix(digits, "-")
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	} else if scale < 0 {
		digits += strings.Repeat("0", -scale)
	}
	if neg {
		digits = "-" + digits
	}
	return t.ParseText(digits)
}

// unavailable is what Debezium writes (unavailable.value.placeholder, by default) for a value the
// database did not log: an unchanged TOASTed column of a PostgreSQL UPDATE, an unchanged Oracle
// LOB. A bytes column holds the placeholder's bytes (base64, or hex with binary.handling.mode=hex),
// a text array the placeholder alone, an int or bigint array the placeholder's bytes as numbers
// (debezium-connector-postgres UnchangedToastedPlaceholder).
const unavailable = "__debezium_unavailable_value"

// The placeholder's other forms (see unavailable).
const (
	unavailableBase64 = `"X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="`
	unavailableHex    = `"5f5f646562657a69756d5f756e617661696c61626c655f76616c7565"`
	unavailableInts   = `[95,95,100,101,98,101,122,105,117,109,95,117,110,97,118,97,105,108,97,98,108,101,95,118,97,108,117,101]`
)

// isUnavailable tells whether a member's raw JSON is Debezium's placeholder of an unavailable
// value.
func isUnavailable(raw string) bool {
	if len(raw) < len(unavailable)+2 || raw[0] != '"' && raw[0] != '[' {
		return false
	}
	return raw == `"`+unavailable+`"` || raw == unavailableBase64 || raw == `["`+unavailable+`"]` || raw == unavailableHex || raw == unavailableInts
}

// unavailableSet is the mask of the columns a relational event sets when Debezium left some of
// "after" unavailable (d.unavail; the message key may have given them since), or nil.
func (d *Decoder) unavailableSet(after []pipeline.Value) []bool {
	var set []bool
	for _, ci := range d.unavail {
		if after[ci].Kind != pipeline.KindNull {
			continue
		}
		if set == nil {
			set = d.allocSet()
			for i := range set {
				set[i] = true
			}
		}
		set[ci] = false
	}
	return set
}

// cassandraCell unwraps a Debezium Cassandra connector cell {"value": v, "deletion_ts": t, "set": b}.
// expires tells whether the cell carries a deletion_ts, which for a cell with a value is the
// expiry of a write with a TTL.
func cassandraCell(raw string) (value string, expires, ok bool) {
	hasValue, other := false, false
	err := cqlvalue.ObjectFields(raw, func(name, r string) {
		switch name {
		case "value":
			value, hasValue = r, true
		case "deletion_ts":
			expires = r != "null"
		case "set":
		default:
			other = true
		}
	})
	if err != nil || !hasValue || other {
		return "", false, false
	}
	return value, expires, true
}

// deletionTime is the deletion_ts (µs) of the Cassandra connector's cells in a delete event's
// image: the time of the row or partition deletion. 0: none.
func deletionTime(img string) int64 {
	var dt int64
	cqlvalue.ObjectFields(img, func(_, raw string) {
		if dt != 0 || len(raw) == 0 || raw[0] != '{' {
			return
		}
		cqlvalue.ObjectFields(raw, func(name, r string) {
			if name == "deletion_ts" {
				dt, _ = strconv.ParseInt(r, 10, 64)
			}
		})
	})
	return max(dt, 0)
}

// notMillis tells whether t is or holds a timestamp declared in a unit other than milliseconds.
func notMillis(t cqlvalue.Type) bool {
	if t.Kind == cqlvalue.Timestamp && t.Unit() != cqlvalue.UnitAuto && t.Unit() != cqlvalue.UnitMillis {
		return true
	}
	for _, p := range t.Fields() {
		if notMillis(p) {
			return true
		}
	}
	return false
}

// unitDays is the unit of a timestamp column the envelope schema gives a date (days since the
// epoch, io.debezium.time.Date or Kafka Connect's Date), beside cqlvalue's units: the decoder's
// own, never given to cqlvalue.
const unitDays cqlvalue.TimeUnit = 0xff

// unitNotInstant marks a timestamp or date column the envelope schema gives a value of another
// kind (a time of day, a year; an instant for a date column): read as the column's, its number
// would be another time, so the change is rejected.
const unitNotInstant cqlvalue.TimeUnit = 0xfe

// scaledTimestamp reads a timestamp column whose unit the envelope schema gives (unit: the
// io.debezium.time type's cqlvalue.TimeUnit, or unitDays): the schema overrides
// source.timestamp_unit, and a value below the millisecond is rejected, never rounded.
func (d *Decoder) scaledTimestamp(ci int, raw string, unit cqlvalue.TimeUnit) (pipeline.Value, error) {
	if unit == unitNotInstant {
		if raw == "null" {
			return pipeline.Null, nil
		}
		return pipeline.Null, fmt.Errorf("the event's schema gives %s, which a %s column cannot hold (its number would be read as another time): "+
			"declare the column bigint or text in source.columns", d.timeTypes[ci], d.types[ci].Kind)
	}
	if unit == unitDays {
		// a date is its midnight, UTC, as Debezium counts its days
		v, err := cqlvalue.Scalar(cqlvalue.Date).FromJSON(raw)
		if err != nil || v.Kind == pipeline.KindNull {
			return v, err
		}
		return pipeline.Value{Num: v.Num * 86_400_000, Kind: pipeline.KindInt}, nil
	}
	if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
		ms, err := cqlvalue.EpochMillis(n, unit)
		if err != nil {
			return pipeline.Null, err
		}
		return pipeline.Value{Num: ms, Kind: pipeline.KindInt}, nil
	}
	// null, ISO-8601 text, or a quoted epoch: read in the envelope's unit too
	return cqlvalue.Scalar(cqlvalue.Timestamp).WithTimestampUnit(unit).FromJSON(raw)
}

// keyDoc returns the key as a JSON object (unwrapping schema/payload, whose schema it returns
// too), or "" when it is not one.
func keyDoc(key []byte) (doc, schema string) {
	k := strings.TrimSpace(str(key))
	if !strings.HasPrefix(k, "{") {
		return "", ""
	}
	var schemaRaw, payloadRaw string
	members := 0
	if cqlvalue.ObjectFields(k, func(name, raw string) {
		members++
		switch name {
		case "schema":
			schemaRaw = raw
		case "payload":
			payloadRaw = raw
		}
	}) != nil {
		return "", ""
	}
	if members == 2 && schemaRaw != "" {
		if strings.HasPrefix(payloadRaw, "{") {
			return payloadRaw, schemaRaw
		}
		return "", "" // a wrapped scalar key: handled by keyScalar
	}
	return k, ""
}

// keyUnits returns the time units of a Debezium key's columns, or a JSON row's (nil: none): a
// key the JSON converter wrapped names them in its own schema; an unwrapped key's columns are the value's,
// whose envelope schema gave them. Read in milliseconds, a MicroTimestamp key column refused
// every tombstone of its rows.
func (d *Decoder) keyUnits(schema string) []cqlvalue.TimeUnit {
	if schema == "" || schema == "null" {
		if d.scaleAny {
			return d.scale
		}
		return nil
	}
	if schema != d.lastKeySchema {
		d.lastKeySchema = strings.Clone(schema)
		d.keyScale, d.keyDecScale = nil, nil
		var s connectSchema
		if json.Unmarshal([]byte(schema), &s) == nil {
			if scale := make([]cqlvalue.TimeUnit, len(d.names)); d.timeUnits(s.Fields, scale) {
				d.keyScale = scale
			}
			d.keyDecScale = d.decimalScales(s.Fields, nil)
		}
	}
	return d.keyScale
}

// fillFromKey sets null columns from the message key; it returns the fields it found.
func (d *Decoder) fillFromKey(vals []pipeline.Value, key []byte) (found int, rerr *pipeline.RowError) {
	if doc, schema := keyDoc(key); doc != "" {
		tmp := d.alloc()
		units := d.keyUnits(schema)
		if schema != "" && schema != "null" {
			// a wrapped key's decimals take their scales from its own schema: a tombstone may
			// come before any value with a schema (a JSON row's key as its row: connectRow)
			valueScales := d.decScale
			d.decScale, d.connectRow = d.keyDecScale, d.format == FormatJSON
			rerr = d.fields(doc, tmp, units, nil)
			d.decScale, d.connectRow = valueScales, false
		} else {
			rerr = d.fields(doc, tmp, units, nil)
		}
		if rerr != nil {
			return 0, rerr
		}
		for i, v := range tmp {
			if v.Kind != pipeline.KindNull {
				found++
				if vals[i].Kind == pipeline.KindNull {
					vals[i] = v
				}
			}
		}
		return found, nil
	}
	if d.keyCol < 0 {
		return 0, nil
	}
	v, err := d.keyScalar(key)
	if err != nil {
		return 0, &pipeline.RowError{Code: cqlvalue.ErrorCode(err), Field: d.names[d.keyCol], Message: "message key: " + err.Error()}
	}
	if v.Kind != pipeline.KindNull {
		found++
		if vals[d.keyCol].Kind == pipeline.KindNull {
			vals[d.keyCol] = v
		}
	}
	return found, nil
}

// keyScalar reads a key that is not an object: JSON (a string, a number, a wrapped payload)
// or, failing that, the raw bytes as text.
func (d *Decoder) keyScalar(key []byte) (pipeline.Value, error) {
	t := d.types[d.keyCol]
	k := strings.TrimSpace(str(key))
	if strings.HasPrefix(k, "{") {
		var schemaRaw, payloadRaw string
		if cqlvalue.ObjectFields(k, func(name, raw string) {
			switch name {
			case "schema":
				schemaRaw = raw
			case "payload":
				payloadRaw = raw
			}
		}) == nil && payloadRaw != "" {
			if schemaRaw != d.lastScalarSchema {
				// its schema says whether the value is a Decimal's bytes, as a wrapped row's does
				d.lastScalarSchema, d.scalarKeyDec = strings.Clone(schemaRaw), 0
				var s connectSchema
				if json.Unmarshal([]byte(schemaRaw), &s) == nil && s.Name == "org.apache.kafka.connect.data.Decimal" {
					if sc, err := strconv.Atoi(s.Parameters["scale"]); err == nil && sc > -decimalBias && sc < decimalBias {
						d.scalarKeyDec = sc + decimalBias
					}
				}
			}
			if b64, ok := unquoteSimple(payloadRaw); ok && d.scalarKeyDec > 0 && t.Kind != cqlvalue.Blob {
				return unscaledBytes(t, b64, d.scalarKeyDec-decimalBias)
			}
			return t.FromJSON(payloadRaw)
		}
	}
	if (t.Kind == cqlvalue.Text || t.Kind == cqlvalue.Ascii) && k != "" && k[0] != '"' && k != "null" {
		// a text key's bytes are its value: FromJSON would read a number or boolean without
		// the blanks around it (" 42" as "42"), another key than the row's
		return t.ParseText(str(key))
	}
	if v, err := t.FromJSON(k); err == nil {
		return v, nil
	}
	return t.ParseText(str(key))
}

// tombstone is the delete a null value means: the key in the message key.
func (d *Decoder) tombstone(key []byte) Change {
	if len(key) == 0 {
		return Change{Err: &pipeline.RowError{Code: pipeline.CodeParse, Message: "tombstone (null value) without a key: nothing to delete"}}
	}
	vals := d.alloc()
	found, rerr := d.fillFromKey(vals, key)
	if rerr != nil {
		return Change{Err: rerr}
	}
	if found == 0 {
		msg := "tombstone (null value) whose key names no source column: the key must be a JSON object of key columns"
		if d.keyCol < 0 {
			msg += ", or set keycol=COLUMN for plain keys"
		}
		return Change{Err: &pipeline.RowError{Code: pipeline.CodeParse, Message: msg}}
	}
	return Change{Op: OpDelete, Values: vals, Tombstone: true}
}

// debeziumTombstone is the change of a Debezium tombstone: the delete of its key, or nothing
// when it follows the delete of another table's row (otherDeletes).
func (d *Decoder) debeziumTombstone(key []byte) Change {
	if t, ok := d.otherDeletes[string(key)]; ok {
		delete(d.otherDeletes, string(key))
		return Change{OtherTable: t}
	}
	return d.tombstone(key)
}

// otherDelete records the message key of another table's delete event, whose tombstone follows.
func (d *Decoder) otherDelete(key []byte, table string) {
	if d.otherDeletes == nil {
		d.otherDeletes = map[string]string{}
	}
	if len(d.otherDeletes) >= maxOtherDeletes {
		for k := range d.otherDeletes { // no tombstones on the topic: forget one
			delete(d.otherDeletes, k)
			break
		}
	}
	d.otherDeletes[string(key)] = table
}

// otherTable returns the table an event names when it is not the mapping's (Table, or the one
// the topic's first event named), and when the mapping does not state its table, the error that
// stops the read; "" when the event is the mapping's table's, or names no table.
func (d *Decoder) otherTable(e *envelope, connector string) (string, error) {
	if e.table == "" {
		return "", nil
	}
	ns, db := e.db, ""
	if connector == "cassandra" || e.keyspace != "" {
		ns = e.keyspace
	} else if e.schemaName != "" {
		ns, db = e.schemaName, e.db
	}
	want := d.Table
	if want == "" {
		if d.Tables == nil {
			d.Tables = &TableSeen{}
		}
		if want = d.Tables.Name(); want == "" {
			name := qualified(ns, e.table)
			if d.Tables.p.CompareAndSwap(nil, &name) {
				return "", nil
			}
			want = d.Tables.Name()
		}
	}
	if namesTable(want, db, ns, e.table, false) {
		return "", nil
	}
	other := qualified(ns, e.table)
	if d.Table != "" {
		if namesTable(d.Table, db, ns, e.table, true) {
			// every event of the table would be skipped as another's
			return other, fmt.Errorf("the mapping's source.table %s names the events' table %s only ignoring case, and the events name their table exactly: "+
				"write source.table: %s", d.Table, other, other)
		}
		return other, nil
	}
	return other, fmt.Errorf("the topic carries events of table %s besides those of table %s, which came first: a mapping reads one table into one, and applied to it "+
		"the other table's events would write its rows into the mapping's table. State the table the mapping reads (source.table: %s), "+
		"and read each other table of the topic with a mapping of its own that states it (source.table: %s): events of the other tables are then counted and skipped",
		other, want, want, other)
}

// qualified is a table's name as a mapping's source.table gives it: "ns.table", or "table".
func qualified(ns, table string) string {
	if ns == "" {
		return table
	}
	return ns + "." + table
}

// namesTable tells whether want names the table: "ns.table", "db.ns.table" (db: a relational
// event's database, when ns is its schema), or "table" when the event has no namespace; fold
// compares ignoring case.
func namesTable(want, db, ns, table string, fold bool) bool {
	eq := func(a, b string) bool { return a == b || fold && strings.EqualFold(a, b) }
	if len(want) < len(table) || !eq(want[len(want)-len(table):], table) {
		return false
	}
	rest := want[:len(want)-len(table)]
	if ns == "" {
		return rest == ""
	}
	if len(rest) < len(ns)+1 || rest[len(rest)-1] != '.' || !eq(rest[len(rest)-1-len(ns):len(rest)-1], ns) {
		return false
	}
	rest = rest[:len(rest)-1-len(ns)]
	return rest == "" || db != "" && len(rest) == len(db)+1 && rest[len(db)] == '.' && eq(rest[:len(db)], db)
}

// noChange refuses a message of one of Debezium's topics that carry no row changes, which a
// mapping reads by mistake: a heartbeat (its only member ts_ms), a transaction's BEGIN or END
// (status and id), a schema change (ddl, tableChanges). nil for another object.
func noChange(body string) *pipeline.RowError {
	members, status, id, ddl, ts := 0, false, false, false, false
	cqlvalue.ObjectFields(body, func(name, _ string) {
		members++
		switch name {
		case "status":
			status = true
		case "id":
			id = true
		case "ddl", "tableChanges":
			ddl = true
		case "ts_ms":
			ts = true
		}
	})
	var msg string
	switch {
	case ddl:
		msg = "a Debezium schema change message (ddl, tableChanges), from the connector's schema change topic (named after its topic.prefix): it changes no row"
	case status && id:
		msg = "a Debezium transaction metadata message (a transaction's BEGIN or END), from the connector's PREFIX.transaction topic: it changes no row"
	case ts && members == 1:
		msg = "a Debezium heartbeat message (ts_ms alone), from the connector's __debezium-heartbeat.PREFIX topic: it changes no row"
	default:
		return nil
	}
	return &pipeline.RowError{Code: CodeUnsupported, Field: "op", Message: msg + ". Read the topic of the table's change events instead (PREFIX.SCHEMA.TABLE, or the one topic routing sends it to)"}
}

// debezium decodes a Debezium change event: {"before", "after", "op", "ts_ms", "source"},
// optionally wrapped as {"schema": ..., "payload": {...}} by the JSON converter. Operations: c
// (create), r (snapshot read), i (Cassandra insert) and u are upserts of after (u also carries
// before, for key changes); d deletes the key in before (relational) or after (Cassandra's
// delete event carries the key cells there) or, failing both, the message key. A null value
// (the tombstone Debezium sends after a delete) deletes the message key again, harmlessly.
func (d *Decoder) debezium(dst []Change, key, value []byte) []Change {
	d.unavail, d.relational = d.unavail[:0], false
	d.types = d.declared
	if len(value) == 0 || isNullDoc(value) {
		return append(dst, d.debeziumTombstone(key))
	}
	doc := str(value)
	var env envelope
	if err := env.read(doc); err != nil {
		return append(dst, Change{Err: &pipeline.RowError{Code: pipeline.CodeParse, Message: "invalid JSON: " + err.Error()}})
	}
	body := doc // the event's object: doc, or its payload
	if env.payload != "" || env.schema != "" {
		if env.payload == "null" || env.payload == "" {
			return append(dst, d.debeziumTombstone(key))
		}
		schema := env.schema
		body = env.payload
		if err := env.read(env.payload); err != nil {
			return append(dst, Change{Err: &pipeline.RowError{Code: pipeline.CodeParse, Message: "invalid payload: " + err.Error()}})
		}
		d.useSchema(schema)
	} else {
		d.useSchema("")
	}
	var scale []cqlvalue.TimeUnit
	if d.scaleAny {
		scale = d.scale
	}
	op, ok := unquoteSimple(env.op)
	if !ok && env.op == "" {
		if rerr := noChange(body); rerr != nil {
			return append(dst, Change{Err: rerr})
		}
	}
	if !ok {
		msg := "not a Debezium change event: no \"op\" field (use format=json for plain rows)"
		if env.op != "" {
			msg = "invalid \"op\" " + env.op
		}
		return append(dst, Change{Err: &pipeline.RowError{Code: pipeline.CodeParse, Field: "op", Message: msg}})
	}
	image := func(raw, what string) ([]pipeline.Value, *pipeline.RowError) {
		if raw == "" || raw == "null" {
			return nil, nil
		}
		if raw[0] != '{' {
			return nil, &pipeline.RowError{Code: pipeline.CodeParse, Field: what, Message: "\"" + what + "\" is not an object"}
		}
		vals := d.alloc()
		if rerr := d.fields(raw, vals, scale, nil); rerr != nil {
			return nil, rerr
		}
		return vals, nil
	}
	connector, ts, us, file, pos := env.connector()
	if other, err := d.otherTable(&env, connector); other != "" {
		if op == "d" && err == nil && len(key) > 0 {
			d.otherDelete(key, other)
		}
		return append(dst, Change{OtherTable: other, TableErr: err})
	}
	d.relational = connector != "" && connector != "cassandra"
	if connector == "cassandra" && d.cassUnit >= 0 {
		return append(dst, Change{Err: &pipeline.RowError{Code: pipeline.CodeType, Field: d.names[d.cassUnit],
			Message: fmt.Sprintf("the mapping reads column %q as %s, but Debezium's Cassandra connector writes a timestamp as Cassandra holds it, in epoch milliseconds, "+
				"which another unit would read as another time: remove source.timestamp_unit (or the column's own unit) from the mapping, "+
				"as a cassandra:// source refuses it too", d.names[d.cassUnit], d.types[d.cassUnit])}})
	}
	if connector == "cassandra" && d.msTypes != nil {
		d.types = d.msTypes // Cassandra's timestamps: epoch milliseconds, as the cassandra:// source reads them
	}
	if connector != "cassandra" {
		ts = 0 // another database's commit time is not a Cassandra cell timestamp
	} else if d.SkipRepeats && file != "" && pos >= 0 && d.logs.repeats(file, pos, d.eventID(key, env.after)) {
		d.Repeats++
		return append(dst, Change{Repeat: true})
	} else if pos < 0 || pos != d.mutPos || file != d.mutFile { // no position: a mutation of its own
		if file != d.mutFile {
			d.mutFile = strings.Clone(file) // file aliases the message; a segment has many
		}
		d.mutPos, d.mutNewest = pos, 0
	}
	if connector == "cassandra" && (op == "i" || op == "u") {
		d.mutNewest = max(d.mutNewest, us) // a row written, even if its event is rejected
	}
	switch op {
	case "c", "r", "i", "u":
		if op == "r" && cassandraEvent(connector, strings.Contains(env.after, `"`+rangeStart+`"`)) {
			// the Cassandra connector's r is a range tombstone, not a snapshot read
			ch := d.rangeTombstone(key, env.after, scale)
			if ch.Err == nil {
				ch.WriteTime = ts
				// The connector publishes a mutation's rows before its range tombstones. A
				// BATCH that deletes a range and writes a row in it at a newer timestamp (USING
				// TIMESTAMP) leaves the row in Cassandra, which the delete applied after it
				// would remove.
				if us > 0 && d.mutNewest > us {
					ch.AfterNewerWrite = d.mutNewest / 1000
				}
			}
			return append(dst, ch)
		}
		set := d.allocSet()
		d.mark, d.cells, d.unknown, d.ttlCells = set, 0, "", 0
		after, rerr := image(env.after, "after")
		d.mark = nil
		if rerr != nil {
			return append(dst, Change{Err: rerr})
		}
		if d.unknown != "" && cassandraEvent(connector, true) {
			return append(dst, Change{Err: &pipeline.RowError{Code: CodeUnknownColumn, Field: d.unknown,
				Message: fmt.Sprintf("the event writes column %q, which the mapping's source.columns does not declare (a column added to the table?), "+
					"so its value would be lost: add it to source.columns (and to target.exclude to leave it out of the table), then apply the rejected events again (the rejects files list their partitions and offsets)", d.unknown)}})
		}
		if after == nil {
			return append(dst, Change{Err: &pipeline.RowError{Code: pipeline.CodeParse, Field: "after", Message: "op " + op + " without an \"after\" row"}})
		}
		if len(key) > 0 && d.anyNull(after) {
			d.fillFromKey(after, key)
		}
		ch := Change{Op: OpUpsert, Values: after, WriteTime: ts}
		if cassandraEvent(connector, op == "i" || d.cells > 0) {
			// Cassandra: the event carries the cells the mutation wrote, an INSERT's as an
			// UPDATE's; the columns it does not name keep their values
			ch.Set = partialSet(set, after)
			ch.PrimaryKey = d.primaryKey(key)
			ch.TTLCells = d.ttlCells
			d.emptyCollections(ch.Set, after)
			if op == "u" {
				if rerr := d.collectionUpdate(ch.Set); rerr != nil {
					return append(dst, Change{Err: rerr})
				}
			}
		} else if d.relational {
			// a relational connector's event names every column it publishes, null ones too (the
			// JSON converter writes each field of the row's struct): one it lacks (left out by
			// column.exclude.list), or whose value Debezium could not read, the change does not set
			ch.Set = partialSet(set, after)
			if ch.Set != nil {
				d.warnLacking(ch.Set)
			}
		} else if len(d.unavail) > 0 {
			// the columns Debezium could not read keep their values: the change sets the others
			ch.Set = d.unavailableSet(after)
		}
		if op == "u" {
			before, rerr := image(env.before, "before")
			if rerr != nil {
				return append(dst, Change{Err: rerr})
			}
			if before == nil && !cassandraEvent(connector, d.cells > 0) {
				// a relational update without its old row: the row is named by its message key
				// only, so a target key of other columns is found unknown, never taken for the
				// new row's (the update may have moved it)
				before, ch.BeforeFromKey = d.alloc(), true
				if len(key) > 0 {
					d.fillFromKey(before, key) // a key that cannot be read leaves the old key unknown
				}
			}
			ch.Before = before
		}
		return append(dst, ch)
	case "d":
		img, what := env.before, "before"
		if img == "" || img == "null" {
			img, what = env.after, "after"
		}
		d.cells = 0
		vals, rerr := image(img, what)
		if rerr != nil {
			return append(dst, Change{Err: rerr})
		}
		if vals == nil {
			// the delete by its message key: the event itself, not the redundant tombstone
			// after it, which a target key of more than the message key may drop
			ch := d.tombstone(key)
			ch.Tombstone = false
			return append(dst, ch)
		}
		if len(key) > 0 && d.anyNull(vals) {
			d.fillFromKey(vals, key)
		}
		ch := Change{Op: OpDelete, Values: vals, WriteTime: ts}
		if connector == "cassandra" {
			// the event's time is its mutation's newest (a row a BATCH wrote after the delete);
			// the delete's own is in its cells
			if dt := deletionTime(img); dt > 0 {
				ch.WriteTime = max(dt/1000, 1)
			}
		}
		if cassandraEvent(connector, d.cells > 0) {
			ch.PrimaryKey = d.primaryKey(key)
		}
		if cassandraEvent(connector, d.cells > 0) && d.anyNull(vals) {
			// the Cassandra connector's partition delete: the clustering cells are null
			ch.Set = d.allocSet()
			for i, v := range vals {
				ch.Set[i] = v.Kind != pipeline.KindNull
			}
		}
		return append(dst, ch)
	case "t", "m":
		// Emptying the table by hand would also remove what was replicated after the truncate;
		// verify lists just the rows the source no longer has.
		msg := "Debezium truncate event (op t) is not replicated: the table keeps the rows the truncate removed at the source. " +
			"Do not empty the table, which would also remove the rows replicated since: once replicate has caught up, " +
			"`rekey verify --repair FILE` against the source (or an export of it as a file) lists the rows the source no longer has in FILE.extra-keys, to delete"
		if op == "m" {
			msg = "Debezium logical decoding message event (op m) is not replicated: it changes no row"
		}
		return append(dst, Change{Err: &pipeline.RowError{Code: CodeUnsupported, Field: "op", Message: msg}})
	}
	return append(dst, Change{Err: &pipeline.RowError{Code: pipeline.CodeParse, Field: "op", Message: "unknown Debezium op " + strconv.Quote(op)}})
}

// collectionUpdate refuses a Cassandra UPDATE event that sets a non-frozen collection. The
// connector writes such a cell from the elements the mutation wrote (Cassandra5CommitLogReadHandlerImpl
// reads the column's cells and not its deletion): an append, an element put or removal and a
// whole new value all look alike, so applying it would replace the collection with a part of it.
// An INSERT writes the whole collection and is applied.
func (d *Decoder) collectionUpdate(set []bool) *pipeline.RowError {
	for i, on := range set {
		if t := d.types[i]; on && t.Kind.IsCollection() && !t.Frozen {
			return &pipeline.RowError{Code: CodeCollectionUpdate, Field: d.names[i],
				Message: fmt.Sprintf("the UPDATE sets column %q, a non-frozen %s: Debezium's Cassandra connector sends only the elements the update wrote "+
					"(an append, an element set or removed and a whole new value look alike), not the collection it leaves. "+
					"Copy the rows from Cassandra again (rekey verify --repair, then migrate the repair file), or make the column frozen so that an update writes it whole", d.names[i], t)}
		}
	}
	return nil
}

// emptyCollections makes null the empty non-frozen collections a Cassandra event sets: Cassandra
// keeps no empty non-frozen collection (it reads back as null, and a copy writes null), while the
// connector writes the cells the mutation held, none, as [] or {}.
func (d *Decoder) emptyCollections(set []bool, vals []pipeline.Value) {
	for i, on := range set {
		if t := d.types[i]; on && t.Kind.IsCollection() && !t.Frozen && (vals[i].Str == "[]" || vals[i].Str == "{}") {
			vals[i] = pipeline.Null
		}
	}
}

// primaryKey returns the columns the Cassandra connector's message key names (the table's primary
// key, null clustering columns included), learnt from the first key that names one; nil while
// none has.
func (d *Decoder) primaryKey(key []byte) []bool {
	if d.pk != nil {
		return d.pk
	}
	doc, _ := keyDoc(key)
	if doc == "" {
		return nil
	}
	pk, found := make([]bool, len(d.names)), false
	cqlvalue.ObjectFields(doc, func(name, _ string) {
		if ci := d.lookup(name); ci >= 0 {
			pk[ci], found = true, true
		}
	})
	if found {
		d.pk = pk
	}
	return d.pk
}

// cassandraEvent tells whether an event comes from Debezium's Cassandra connector: its
// source.connector says so, or, when the event has no source, its shape (an op or cells only
// that connector writes) does. Another connector's JSON column that looks like a cell does not.
func cassandraEvent(connector string, shape bool) bool {
	return connector == "cassandra" || connector == "" && shape
}

// partialSet completes the mask of the cells an event sets with the key columns its message key
// filled, and returns nil when it sets every column (a whole row).
func partialSet(set []bool, vals []pipeline.Value) []bool {
	all := true
	for i := range set {
		if !set[i] && vals[i].Kind != pipeline.KindNull {
			set[i] = true
		}
		all = all && set[i]
	}
	if all {
		return nil
	}
	return set
}

// The members of a Cassandra range tombstone's "after" that hold its bounds.
const (
	rangeStart = "_range_start"
	rangeEnd   = "_range_end"
)

// rangeBound is a bound as the connector writes it (RangeData): Cassandra's ClusteringPrefix
// kind and the clustering values in Cassandra's text form.
type rangeBound struct {
	Method string `json:"method"`
	Values []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
		Type  string `json:"type"`
	} `json:"values"`
}

// rangeTombstone decodes the Cassandra connector's range tombstone (op r): the partition key
// cells in "after", and its bounds in after._range_start and after._range_end.
func (d *Decoder) rangeTombstone(key []byte, after string, scale []cqlvalue.TimeUnit) Change {
	if !strings.HasPrefix(after, "{") {
		return Change{Err: &pipeline.RowError{Code: pipeline.CodeParse, Field: "after", Message: "range tombstone (op r) without an \"after\" object"}}
	}
	vals, set := d.alloc(), d.allocSet()
	var startRaw, endRaw string
	d.mark = set
	rerr := d.fields(after, vals, scale, func(name, raw string) {
		switch name {
		case rangeStart:
			startRaw = raw
		case rangeEnd:
			endRaw = raw
		}
	})
	d.mark = nil
	if rerr != nil {
		return Change{Err: rerr}
	}
	var r pipeline.ClusteringRange
	for _, b := range []struct {
		raw, name, incl, excl string
		dst                   *pipeline.ClusteringBound
	}{{startRaw, rangeStart, "INCL_START_BOUND", "EXCL_START_BOUND", &r.Start}, {endRaw, rangeEnd, "INCL_END_BOUND", "EXCL_END_BOUND", &r.End}} {
		if rerr := d.bound(b.raw, b.name, b.incl, b.excl, b.dst); rerr != nil {
			return Change{Err: rerr}
		}
	}
	if len(key) > 0 && d.anyNull(vals) {
		d.fillFromKey(vals, key)
	}
	for i := range set {
		set[i] = set[i] || vals[i].Kind != pipeline.KindNull
	}
	return Change{Op: OpRangeDelete, Values: vals, Set: set, Range: &r}
}

// bound reads one bound of a range tombstone into dst.
func (d *Decoder) bound(raw, name, incl, excl string, dst *pipeline.ClusteringBound) *pipeline.RowError {
	if raw == "" || raw == "null" {
		return &pipeline.RowError{Code: pipeline.CodeParse, Field: name, Message: "range tombstone (op r) without its " + name + " bound"}
	}
	var b rangeBound
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		return &pipeline.RowError{Code: pipeline.CodeParse, Field: name, Message: "invalid range bound: " + err.Error()}
	}
	switch b.Method {
	case incl:
		dst.Inclusive = true
	case excl:
	default:
		return &pipeline.RowError{Code: pipeline.CodeParse, Field: name, Message: "unknown range bound kind " + strconv.Quote(b.Method) + ", want " + incl + " or " + excl}
	}
	for _, v := range b.Values {
		ci := d.lookup(v.Name)
		if ci < 0 {
			return &pipeline.RowError{Code: pipeline.CodeParse, Field: name, Message: "the range bound names clustering column " + strconv.Quote(v.Name) + ", which is not a source column of the mapping"}
		}
		val, err := d.types[ci].ParseText(v.Value)
		if err != nil {
			return &pipeline.RowError{Code: cqlvalue.ErrorCode(err), Field: v.Name, Message: name + ": " + err.Error()}
		}
		dst.Cols = append(dst.Cols, ci)
		dst.Vals = append(dst.Vals, val)
		// the connector names a column DESC in the table's clustering order by its reversed
		// type, and gives the bounds in that order
		dst.Desc = append(dst.Desc, strings.HasPrefix(v.Type, reversedType))
	}
	return nil
}

// reversedType begins the Cassandra type the connector gives a range bound's value of a
// clustering column that is DESC in the table's clustering order.
const reversedType = "org.apache.cassandra.db.marshal.ReversedType("

// envelope holds the raw members of a Debezium event (or of its JSON converter wrapping).
type envelope struct {
	schema, payload   string
	op, before, after string
	source            string
	// the event's table, from its source (connector reads them): db, schema and table of a
	// relational connector, keyspace and table of Cassandra's
	db, schemaName, table, keyspace string
}

func (e *envelope) read(doc string) error {
	*e = envelope{}
	return cqlvalue.ObjectFields(doc, func(name, raw string) {
		switch name {
		case "schema":
			e.schema = raw
		case "payload":
			e.payload = raw
		case "op":
			e.op = raw
		case "before":
			e.before = raw
		case "after":
			e.after = raw
		case "source":
			e.source = raw
		}
	})
}

// connector reads the event's source: source.connector ("cassandra", "mysql", ...) or "", the
// event's time in epoch milliseconds from source.ts_us (microseconds, newer Debezium) or
// source.ts_ms, or 0, and the commit log position (source.file, source.pos) of Debezium's
// Cassandra connector (file "" and pos -1 when none). A Cassandra write time before the first
// millisecond (USING TIMESTAMP 0, or a negative one) is 1 ms, as a copied cell's is: every later
// write still beats it, where none would reject the change.
func (e *envelope) connector() (connector string, ms, us int64, file string, pos int64) {
	pos = -1
	timed := false
	if strings.HasPrefix(e.source, "{") {
		cqlvalue.ObjectFields(e.source, func(name, raw string) {
			switch name {
			case "connector":
				connector, _ = unquoteSimple(raw)
			case "ts_us":
				var err error
				if us, err = strconv.ParseInt(raw, 10, 64); err == nil {
					timed = true
				}
			case "ts_ms":
				var err error
				if ms, err = strconv.ParseInt(raw, 10, 64); err == nil {
					timed = true
				}
			case "file":
				file, _ = unquoteSimple(raw)
			case "db":
				e.db, _ = unquoteSimple(raw)
			case "schema":
				e.schemaName, _ = unquoteSimple(raw)
			case "table":
				e.table, _ = unquoteSimple(raw)
			case "keyspace":
				e.keyspace, _ = unquoteSimple(raw)
			case "pos":
				if p, err := strconv.ParseInt(raw, 10, 64); err == nil {
					pos = p
				}
			}
		})
	}
	if us > 0 {
		ms = us / 1000
	}
	if timed && connector == "cassandra" {
		ms = max(ms, 1)
	}
	return connector, max(ms, 0), max(us, 0), file, pos
}

func unquoteSimple(raw string) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	if strings.ContainsAny(s, `\"`) {
		var out string
		if json.Unmarshal([]byte(raw), &out) != nil {
			return "", false
		}
		return out, true
	}
	return s, true
}

// connectSchema is the part of a Kafka Connect JSON schema rekey reads: the logical type names of
// the fields of the before/after structs.
type connectSchema struct {
	Field      string            `json:"field"`
	Type       string            `json:"type"`
	Name       string            `json:"name"`
	Parameters map[string]string `json:"parameters"`
	Fields     []connectSchema   `json:"fields"`
}

// useSchema updates the per-column time units from an envelope schema (cached: Debezium repeats
// the same schema text in every message).
func (d *Decoder) useSchema(raw string) {
	if raw == d.lastSchema {
		return
	}
	d.lastSchema = strings.Clone(raw)
	d.scale = make([]cqlvalue.TimeUnit, len(d.names))
	d.scaleAny, d.decScale = false, nil
	if raw == "" || raw == "null" {
		return
	}
	var s connectSchema
	if json.Unmarshal([]byte(raw), &s) != nil {
		return
	}
	for _, img := range s.Fields {
		if img.Field != "after" && img.Field != "before" {
			continue
		}
		if d.timeUnits(img.Fields, d.scale) {
			d.scaleAny = true
		}
		d.decScale = d.decimalScales(img.Fields, d.decScale)
	}
}

// decimalScales sets in dec, per column, decimalBias + the scale of an org.apache.kafka.connect.data.Decimal
// fields give it, variableScale for an io.debezium.data.VariableScaleDecimal, or stringBytes for a
// blob column they give a string, making dec when there is one and it is nil, and returns it.
func (d *Decoder) decimalScales(fields []connectSchema, dec []int) []int {
	for _, f := range fields {
		ci := d.column(f.Field)
		if ci < 0 {
			continue
		}
		mark := 0
		if sc, err := strconv.Atoi(f.Parameters["scale"]); err == nil && f.Name == "org.apache.kafka.connect.data.Decimal" && sc > -decimalBias && sc < decimalBias {
			mark = sc + decimalBias
		} else if f.Name == "io.debezium.data.VariableScaleDecimal" {
			mark = variableScale
		} else if f.Type == "string" && f.Name == "" && d.types[ci].Kind == cqlvalue.Blob {
			mark = stringBytes
		}
		if mark != 0 {
			if dec == nil {
				dec = make([]int, len(d.names))
			}
			dec[ci] = mark
		}
	}
	return dec
}

// timeUnits sets in scale the unit of each timestamp column that fields give an io.debezium.time
// or Kafka Connect type counted from the epoch, and tells whether there was one.
func (d *Decoder) timeUnits(fields []connectSchema, scale []cqlvalue.TimeUnit) bool {
	found := false
	for _, f := range fields {
		ci := d.column(f.Field)
		if ci < 0 {
			continue
		}
		var unit cqlvalue.TimeUnit
		switch f.Name {
		case "io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp":
			unit = cqlvalue.UnitMillis
		case "io.debezium.time.Date", "org.apache.kafka.connect.data.Date":
			unit = unitDays
		case "io.debezium.time.MicroTimestamp":
			unit = cqlvalue.UnitMicros
		case "io.debezium.time.NanoTimestamp":
			unit = cqlvalue.UnitNanos
		case "io.debezium.time.Time", "io.debezium.time.MicroTime", "io.debezium.time.NanoTime",
			"org.apache.kafka.connect.data.Time", "io.debezium.time.Year":
			unit = unitNotInstant
		}
		switch k := d.types[ci].Kind; {
		case unit != 0 && k == cqlvalue.Timestamp:
			scale[ci] = unit
			found = true
		case unit != 0 && unit != unitDays && k == cqlvalue.Date:
			// a date column holds days: an instant, a time of day or a year is not one
			scale[ci] = unitNotInstant
			found = true
		}
		if scale[ci] == unitNotInstant {
			if d.timeTypes == nil {
				d.timeTypes = map[int]string{}
			}
			d.timeTypes[ci] = f.Name
		}
	}
	return found
}

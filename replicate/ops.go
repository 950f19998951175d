package replicate

import (
	"slices"
	"strconv"
	"strings"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/source/kafka"
)

// The change -> operations step both appliers (files and SQL) share: what a decoded change does
// to the output, as operations in the order they are applied. The appliers only carry them out.

// opKind is what an operation does to the output.
type opKind uint8

const (
	opUpsert      opKind = iota + 1 // write row: whole, or the columns set names
	opDelete                        // delete the key in row's first KeyLen values
	opDeleteRange                   // delete the rows in keyRange
	opReject                        // reject the change's message (stage, err)
	opDrop                          // nothing to apply: a redundant Debezium tombstone, counted
	opRepeat                        // nothing to apply: an event the connector published before, counted
	opOther                         // nothing to apply: an event of another table than the mapping's, counted
)

func (k opKind) String() string {
	switch k {
	case opUpsert:
		return "upsert"
	case opDelete:
		return "delete"
	case opDeleteRange:
		return "range delete"
	case opReject:
		return "reject"
	case opDrop:
		return "drop"
	case opRepeat:
		return "repeat"
	case opOther:
		return "other table"
	}
	return "op(" + strconv.Itoa(int(k)) + ")"
}

// stage is the stage that rejects a change, as its rejects line names it.
type stage uint8

const (
	stageSource    stage = iota + 1 // the message cannot be decoded, or lacks what the output needs
	stageTransform                  // the mapping cannot take the change
	stageSink                       // the output cannot hold it
)

func (s stage) String() string {
	switch s {
	case stageSource:
		return "source"
	case stageTransform:
		return "transform"
	case stageSink:
		return "sink"
	}
	return "stage(" + strconv.Itoa(int(s)) + ")"
}

// operation is one effect of a change on the output. Its row and mask live in the step's
// rowSlab (valid until its reset); the error of a reject may be the evaluator's.
type operation struct {
	kind      opKind
	stage     stage              // opReject
	row       []pipeline.Value   // opUpsert: the target row; opDelete: the key in its first KeyLen values
	set       []bool             // opUpsert: the target columns a partial change sets; nil: the whole row
	keyRange  *pipeline.KeyRange // opDeleteRange
	writeTime int64              // the change's Cassandra write time in epoch ms (0: none)
	err       *pipeline.RowError // opReject
}

// outputCaps is what the output can hold, which decides some changes' operations.
type outputCaps struct {
	// wholeRows: bulk-load files, which hold whole rows: a change that sets some columns, a
	// range delete and a partition delete are rejected (stage sink).
	wholeRows bool
	// writeTime: the table writes cell timestamps, so a change without its write time is
	// rejected (a redundant Debezium tombstone dropped).
	writeTime bool
	// values: the output refuses values of its own (CSV: what Spark's CSV reader cannot read
	// back; a table: what no statement carries, a NaN DOUBLE), which its sink rejects. An update
	// that moves its row to another key and whose new row it refuses is rejected before the old
	// key's delete: applied alone, that delete would take the row out of the table. nil: none.
	values files.ValueChecker
}

// operations appends the operations of one change to dst: a reject, a drop, a delete of a key
// or a range, or an upsert, which an update whose before image maps to another key precedes
// with the delete of the old key (or with the reject saying the old key cannot be computed).
func (w *partWorker) operations(dst []operation, ch *kafka.Change) []operation {
	if ch.OtherTable != "" {
		// applied, it would write another table's row into the mapping's table
		return append(dst, operation{kind: opOther})
	}
	if ch.Repeat {
		// applied again after newer events of its keys, it would undo them
		return append(dst, operation{kind: opRepeat})
	}
	if ch.Err != nil {
		return reject(dst, stageSource, ch.Err)
	}
	if ch.PrimaryKey != nil && ch.Op != kafka.OpRangeDelete {
		if rerr := w.regularKeyColumn(ch.PrimaryKey); rerr != nil {
			return reject(dst, stageTransform, rerr)
		}
	}
	if w.caps.wholeRows {
		if rerr := wholeRowsOnly(ch); rerr != nil {
			return reject(dst, stageSink, rerr)
		}
	}
	if w.caps.writeTime && ch.WriteTime == 0 {
		if w.redundantTombstone(ch) {
			// it repeats the delete event before it, which carried the write time; at the
			// server's time it would hide the writes made after it
			return append(dst, operation{kind: opDrop})
		}
		return reject(dst, stageSource, &pipeline.RowError{Code: CodeNoWriteTime,
			Message: "write_time=true: the event carries no Cassandra write time (source.ts_us or source.ts_ms of Debezium's Cassandra connector); replicate other events without write_time"})
	}
	switch ch.Op {
	case kafka.OpDelete:
		return w.deleteOps(dst, ch)
	case kafka.OpRangeDelete:
		// A cell timestamp newer than the delete's keeps the row the delete's cell timestamp
		// cannot reach; without cell timestamps (or within one millisecond) the delete would
		// remove it. Cassandra keeps it.
		if ch.AfterNewerWrite != 0 && (!w.caps.writeTime || ch.AfterNewerWrite <= ch.WriteTime) {
			return reject(dst, stageSource, &pipeline.RowError{Code: CodeRangeAfterNewerWrite, Field: "op", Message: rangeAfterNewerWrite})
		}
		return w.rangeOps(dst, ch.Values, ch.Set, ch.Range, ch.Offset, ch.WriteTime)
	}
	row := w.rows.row()
	var set []bool
	if ch.Set != nil {
		set = w.rows.set()
	}
	if rerr := w.mapRow(ch, row, set); rerr != nil {
		return reject(dst, stageTransform, rerr)
	}
	if ch.Before != nil {
		old := w.rows.row()
		moved, rerr := w.oldKey(ch.Before, ch.Offset, row, old)
		if moved && rerr == nil && w.caps.values != nil {
			// the files would refuse the new row: the old key's delete alone would lose the row
			if verr := w.caps.values.CheckValues(w.r.target, row); verr != nil {
				return reject(dst, stageSink, verr)
			}
		}
		switch {
		case rerr != nil:
			if ch.BeforeFromKey {
				rerr.Message += noBeforeImage
			}
			dst = reject(dst, stageTransform, rerr)
		case moved && set != nil:
			// the old row holds the values of the columns the change leaves unset: deleted, they
			// would be lost, and the new row would lack them
			if unset := slices.Index(set, false); unset >= 0 {
				col := w.r.target.Columns[unset].Name
				return reject(dst, stageTransform, &pipeline.RowError{Code: CodePartialMove, Field: col,
					Message: "the update moves the row to another key, but does not carry column " + col + " (Debezium could not read its value, or the connector does not publish it), " +
						"which the row under its old key holds: neither is applied, and the row stays under its old key. " +
						"Copy the row from the source again (rekey verify --repair writes it)"})
			}
			dst = append(dst, operation{kind: opDelete, row: old})
		case moved:
			dst = append(dst, operation{kind: opDelete, row: old})
		}
	}
	return append(dst, operation{kind: opUpsert, row: row, set: set, writeTime: ch.WriteTime})
}

// regularKeyColumn refuses a Cassandra change when the target key is computed from a column
// outside the table's primary key (pk): an UPDATE of that column, or an INSERT over the row, moves
// the row to another key, and the connector's events carry no old row to find the old key by.
func (w *partWorker) regularKeyColumn(pk []bool) *pipeline.RowError {
	for i, reads := range w.keyReads {
		for _, ci := range reads {
			if ci >= len(pk) || pk[ci] {
				continue
			}
			src := w.r.cfg.Program.Source()
			var keyed []string
			for c, ok := range pk {
				if ok {
					keyed = append(keyed, src[c].Name)
				}
			}
			n := src[ci].Name
			return &pipeline.RowError{Code: CodeRegularKeyColumn, Field: n,
				Message: "key column " + w.r.target.Columns[i].Name + " is computed from " + n + ", which is not in the Cassandra table's primary key (" + strings.Join(keyed, ", ") +
					", as the message key names it): a change of " + n + " moves the row to another key, and Debezium's Cassandra connector sends no old row to delete it from, so the row would stay under its old key too. " +
					"Compute the target key from primary-key columns only, then replicate into a new table or folder"}
		}
	}
	return nil
}

// rangeAfterNewerWrite is the message of a CodeRangeAfterNewerWrite reject.
const rangeAfterNewerWrite = "a range delete whose mutation (a BATCH) also wrote a row at a newer timestamp (USING TIMESTAMP), published before it: " +
	"Cassandra keeps that row if it lies in the range, and the delete applied after it would remove it; " +
	"the range's other rows are left: verify --repair against Cassandra lists them (the .extra-keys file) to delete"

func reject(dst []operation, st stage, rerr *pipeline.RowError) []operation {
	return append(dst, operation{kind: opReject, stage: st, err: rerr})
}

// redundantTombstone tells whether a change is the tombstone Debezium sends after every delete
// event, of the same key.
func (w *partWorker) redundantTombstone(ch *kafka.Change) bool {
	return ch.Tombstone && w.r.cfg.Kafka.Format == kafka.FormatDebezium
}

// deleteOps is the delete of the key a delete change gives.
//
// Debezium follows every delete event with a tombstone of the same key: when the target key
// cannot be computed from the message key alone (it uses other columns), the tombstone is
// dropped (counted in TombstonesDropped), the delete event having done the work.
func (w *partWorker) deleteOps(dst []operation, ch *kafka.Change) []operation {
	dbzTombstone := w.redundantTombstone(ch)
	if w.r.cfg.Program.UsesSalt() {
		if dbzTombstone {
			return append(dst, operation{kind: opDrop})
		}
		return reject(dst, stageTransform, &pipeline.RowError{Code: kafka.CodeUnsupported,
			Message: "delete: the key uses random(n), whose salt depends on the row and its offset: the key of the row to delete cannot be computed"})
	}
	row := w.rows.row()
	w.rec = pipeline.Record{Values: ch.Values, Seq: ch.Offset}
	if rerr := w.ev.ApplyKey(&w.batch, &w.rec, row); rerr != nil {
		if dbzTombstone && rerr.Code == pipeline.CodeNullKey {
			return append(dst, operation{kind: opDrop})
		}
		if ch.Set != nil && rerr.Code == pipeline.CodeNullKey {
			// a Cassandra partition delete (its clustering cells are null): every row of the
			// partition, an open range
			if w.caps.wholeRows {
				return reject(dst, stageSink, &pipeline.RowError{Code: pipeline.CodeRangeTombstone, Field: rerr.Field,
					Message: "a Cassandra partition delete (its clustering cells are null) deletes every row of the partition, which bulk-load files cannot express: replicate into the table instead (--out mysql://... or lindorm://...)"})
			}
			return w.rangeOps(dst, ch.Values, ch.Set, &pipeline.ClusteringRange{}, ch.Offset, ch.WriteTime)
		}
		rerr.Message = "delete: " + rerr.Message
		if rerr.Code == pipeline.CodeNullKey && !ch.Tombstone && ch.PrimaryKey == nil {
			rerr.Message += noDeleteImage
		}
		return reject(dst, stageTransform, rerr)
	}
	return append(dst, operation{kind: opDelete, row: row, writeTime: ch.WriteTime})
}

// rangeOps is the delete of the key range a Cassandra range tombstone covers, or its reject
// when the mapping's key does not make it one range of the table.
func (w *partWorker) rangeOps(dst []operation, vals []pipeline.Value, set []bool, rng *pipeline.ClusteringRange, offset, writeTime int64) []operation {
	w.rec = pipeline.Record{Values: vals, Seq: offset, Set: set}
	kr, rerr := w.ev.KeyRange(&w.batch, &w.rec, rng, w.rows.row())
	if rerr != nil {
		return reject(dst, stageTransform, rerr)
	}
	return append(dst, operation{kind: opDeleteRange, keyRange: &kr, writeTime: writeTime})
}

// wholeRowsOnly refuses the changes a file of whole rows cannot express: a change that sets
// some columns only (its row would null the others) and a range delete.
func wholeRowsOnly(ch *kafka.Change) *pipeline.RowError {
	switch {
	case ch.Op == kafka.OpRangeDelete:
		return &pipeline.RowError{Code: pipeline.CodeRangeTombstone, Field: "op",
			Message: "a range tombstone (a delete of a clustering range) cannot be written to bulk-load files: replicate into the table instead (--out mysql://... or lindorm://...)"}
	case ch.Set != nil && ch.Op == kafka.OpUpsert:
		return &pipeline.RowError{Code: pipeline.CodePartialUpdate, Field: "after",
			Message: "the change sets some columns only (a Cassandra UPDATE or INSERT that names some columns, or a Debezium event missing a value the database did not log: an unchanged TOASTed or LOB column, or a column the connector does not publish), and a bulk-load file holds whole rows: writing it would null the other columns; replicate into the table instead (--out mysql://... or lindorm://...), which updates the columns the change sets"}
	}
	return nil
}

// mapRow maps a change's values to the target row; set receives the target columns a partial
// change sets (nil for a whole row).
func (w *partWorker) mapRow(ch *kafka.Change, row []pipeline.Value, set []bool) *pipeline.RowError {
	rec := w.record(ch)
	if ch.Set != nil {
		return w.ev.ApplyPartial(&w.batch, rec, row, set)
	}
	// a change that nulls every non-key column deletes those cells: it is not a key-only row
	// to reject (Apply's key_only_row is for whole-row snapshots)
	if rerr := w.ev.ApplyKey(&w.batch, rec, row); rerr != nil {
		return rerr
	}
	return w.ev.CheckValues(row)
}

// oldKey computes into old the key an update's before image maps to; moved tells whether it
// differs from row's. A key with a salt cannot be recomputed (the salt depends on the values):
// never moved, with one warning.
func (w *partWorker) oldKey(before []pipeline.Value, offset int64, row, old []pipeline.Value) (moved bool, rerr *pipeline.RowError) {
	if w.r.cfg.Program.UsesSalt() {
		if !w.saltWarn {
			w.saltWarn = true
			w.log.Warn("the key uses random(n): an update that changes the row's values gets a new salt, and the old key cannot be found to delete it")
		}
		return false, nil
	}
	w.rec = pipeline.Record{Values: before, Seq: offset}
	if rerr := w.ev.ApplyKey(&w.batch, &w.rec, old); rerr != nil {
		// the before image may lack non-key columns; only a key error matters
		rerr.Message = "update: cannot compute the old key from \"before\" to delete it: " + rerr.Message
		return false, rerr
	}
	return !sameKey(w.r.target.Key(), row, old), nil
}

// noDeleteImage follows the message of a relational delete (a Debezium event, or the row
// ExtractNewRecordState rewrites it to) whose old row lacks a column the target key needs.
const noDeleteImage = ` (a relational connector's delete holds the old row's columns as the database logged them: PostgreSQL logs the primary key alone unless the table has REPLICA IDENTITY FULL, ` +
	`so a target key computed from other columns cannot name the row to delete. The row stays in the table: set REPLICA IDENTITY FULL on the source table, ` +
	`and delete the row by hand, or run rekey verify --repair against the source, which lists it in its .extra-keys file)`

// noBeforeImage follows the message of an update whose old key cannot be computed because its
// event has no before image, only its message key (kafka.Change.BeforeFromKey).
const noBeforeImage = ` (the event has no "before" image, only its message key: PostgreSQL logs the old row of an update with REPLICA IDENTITY FULL on the table)`

// sameKey tells whether rows a and b have one key as the table compares it (sqlsink.KeyValue: a
// before image spelling a DECIMAL key 1.50 and the new row 1.5 did not move the row).
func sameKey(key []pipeline.Column, a, b []pipeline.Value) bool {
	for i, col := range key {
		if a[i] != b[i] && sqlsink.KeyValue(col, a[i]) != sqlsink.KeyValue(col, b[i]) {
			return false
		}
	}
	return true
}

// rowSlab hands out target rows and column masks that stay valid until reset: a new backing
// array leaves the rows handed out before it in the old one.
type rowSlab struct {
	n     int // values of a target row
	chunk int // rows a new backing array holds at least
	vals  []pipeline.Value
	sets  []bool
}

func (s *rowSlab) row() []pipeline.Value {
	if len(s.vals)+s.n > cap(s.vals) {
		s.vals = make([]pipeline.Value, 0, max(s.chunk*s.n, 2*cap(s.vals)))
	}
	s.vals = s.vals[:len(s.vals)+s.n]
	return s.vals[len(s.vals)-s.n:]
}

func (s *rowSlab) set() []bool {
	if len(s.sets)+s.n > cap(s.sets) {
		s.sets = make([]bool, 0, max(s.chunk*s.n, 2*cap(s.sets)))
	}
	s.sets = s.sets[:len(s.sets)+s.n]
	return s.sets[len(s.sets)-s.n:]
}

// reset reuses the slab: the rows handed out so far become invalid.
func (s *rowSlab) reset() { s.vals, s.sets = s.vals[:0], s.sets[:0] }

// drop starts new backing arrays: the rows handed out so far stay valid for whoever keeps them.
func (s *rowSlab) drop() { s.vals, s.sets = nil, nil }

// changeReject is the rejects line of a change's message.
func changeReject(topic, stream string, partition int, ch *kafka.Change, st stage, rerr *pipeline.RowError) *output.Reject {
	rj := &output.Reject{
		Position: "kafka:" + stream + ":" + strconv.FormatInt(ch.Offset, 10), Stream: stream, Seq: ch.Offset,
		Stage: st.String(), Code: rerr.Code, Field: rerr.Field, Message: rerr.Message,
		LogPosition: &output.LogPosition{Topic: topic, Partition: partition, Offset: ch.Offset},
	}
	const limit = 64 << 10
	switch {
	case ch.Value == nil:
		rj.Raw = "null"
	case len(ch.Value) > limit:
		rj.Raw = string(ch.Value[:limit])
		rj.Message += " (raw holds the first " + strconv.Itoa(limit) + " of its " + strconv.Itoa(len(ch.Value)) +
			" bytes: read the whole message from topic " + topic + ", partition " + strconv.Itoa(partition) + ", offset " + strconv.FormatInt(ch.Offset, 10) + ")"
	default:
		rj.Raw = string(ch.Value)
	}
	if k := ch.Key; len(k) > 0 {
		rj.Key = string(k[:min(len(k), 4096)])
	}
	return rj
}

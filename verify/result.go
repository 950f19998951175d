package verify

import (
	"fmt"
	"sort"
	"time"
)

// Result is what a verify run found. Field names are stable (snake_case): --json writes it.
type Result struct {
	Mapping string `json:"mapping"`
	Table   string `json:"table"`
	Source  string `json:"source,omitempty"` // set by the caller (redacted)
	Target  string `json:"target,omitempty"` // set by the caller
	// UpTo says, for a replication's changes, the offsets verified up to and where they come
	// from (set by the caller).
	UpTo string `json:"up_to,omitempty"`
	// TargetKind is "folder" (a rekey output: every target row is read) or "lookup" (a table
	// read by key: rows the source does not produce cannot be seen).
	TargetKind string `json:"target_kind"`
	Sample     string `json:"sample"` // "all", "1%", "10000 rows"
	Equal      bool   `json:"equal"`

	RowsRead     int64            `json:"rows_read"`     // source rows read
	RowsRejected int64            `json:"rows_rejected"` // rows migrate rejects too: not looked for
	RejectCodes  map[string]int64 `json:"reject_codes"`
	// RowsSkipped are rows the source read and left out by its own filter (a Cassandra
	// catch-up's since=, a row whose cells all expired, an event of another table than the
	// mapping's source.table): migrate and replicate leave them out too, so they are not looked
	// for; they are in RowsRead.
	RowsSkipped int64 `json:"rows_skipped"`
	// ChangesSkipped are a replication's changes neither replicate nor verify can apply (a
	// truncate, a range delete the table's key cannot express), by code in SkippedCodes: the
	// target cannot be shown to hold the source, so the result is not equal.
	ChangesSkipped int64            `json:"changes_skipped"`
	SkippedCodes   map[string]int64 `json:"skipped_codes"`
	// RowsChecked are the accepted source rows verified (all of them, or the sample's);
	// KeysChecked the distinct keys among them.
	RowsChecked int64 `json:"rows_checked"`
	KeysChecked int64 `json:"keys_checked"`
	// KeysDeleted are the keys a replication's changes leave without a row (not in
	// KeysChecked), each checked to be absent from the target: those it holds are extra.
	KeysDeleted int64 `json:"keys_deleted"`
	// RowsOverwritten are checked rows that a later source row with the same key replaces in
	// the target (the last one wins in Lindorm): each key is compared with its last row.
	RowsOverwritten int64 `json:"rows_overwritten"`
	// RowsLost are the overwritten rows that differ from the row that replaced them (as the
	// target stores them): their values are in no target row (identical repeats lose nothing).
	RowsLost   int64 `json:"rows_lost"`
	TargetRows int64 `json:"target_rows"` // rows read from the target (folder), rows found (lookup)

	Missing int64 `json:"missing"` // keys the target does not hold
	Differ  int64 `json:"differ"`  // keys whose target row differs from the source's
	// DifferColumns counts, per column, the keys whose value differs in it (most first).
	DifferColumns []ColumnCount `json:"differ_columns"`
	// Extra are target rows the source does not produce: rows of keys the source has not, and
	// rows beyond the source's count of their key (a row written twice). ExtraScope says which
	// target rows were looked at for them: null when none were (a table looked up by key).
	Extra      *int64 `json:"extra"`
	ExtraScope string `json:"extra_scope"`

	Examples Examples `json:"examples"`
	// Files are the data files of a folder target that its manifest (or checkpoint) does not
	// account for: files under data/ it does not list (the bulk load reads them: their rows are
	// target rows) and listed files holding another number of rows than it says. Any makes
	// the result different.
	Files []FileRows `json:"files"`
	Notes []string   `json:"notes,omitempty"`
	// Unsettled says why the passes disagree, when comparing the values found none of the
	// differences the digests found: the data changed under verify, which then proves nothing
	// (not equal).
	Unsettled string `json:"unsettled,omitempty"`

	// RepairRows are the source rows given to Config.Repair: those of the keys missing or
	// differing. ExtraKeys are the keys of the target rows the source does not produce (with
	// Config.Repair only): writing source rows again cannot remove them.
	RepairRows int64    `json:"repair_rows,omitempty"`
	ExtraKeys  [][]Cell `json:"-"`

	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_sec"` // source rows read per second, over the whole run

	differ map[string]int64
	// repairKeys are the encoded keys whose source rows Config.Repair receives.
	repairKeys map[string]struct{}
}

// FileRows is a data file the listing does not account for, and the rows it holds.
type FileRows struct {
	Path     string `json:"path"`
	Rows     int64  `json:"rows"`
	Unlisted bool   `json:"unlisted,omitempty"` // not listed at all
	// ListedRows is the rows the listing says a listed file holds.
	ListedRows *int64 `json:"listed_rows,omitempty"`
}

// What Result.Extra covers.
const (
	ExtraAll         = "all"          // every target row was read: a folder, or a table read whole
	ExtraRangesRead  = "ranges_read"  // the rows of the table's key ranges read (not all were)
	ExtraDeletedKeys = "deleted_keys" // the keys a replication's changes delete, looked up
	ExtraNone        = "none"         // no target row but those of the source's keys was read
	ExtraSampledKeys = "sampled_keys" // the target rows of the keys --sample picks (by key hash)
)

// ColumnCount is a column and how many keys differ in it.
type ColumnCount struct {
	Column string `json:"column"`
	Rows   int64  `json:"rows"`
}

// Examples are a few of each kind of difference, those of the smallest key hashes.
type Examples struct {
	Missing []Example `json:"missing"`
	Differ  []Example `json:"differ"`
	Extra   []Example `json:"extra"`
}

// Example is one key with a difference.
type Example struct {
	Key []Cell `json:"key"`
	// Columns are the differing columns (differ), or the whole row the target holds (extra).
	Columns []Diff `json:"columns,omitempty"`
	// Where says where the row is, as rejects say it: the source file and line
	// ("orders.csv:1235", the line a text editor shows), the Kafka partition and offset; and
	// the target file and row ("data/region-0003/part-00000.parquet row 17"; a CSV file's line,
	// "data/region-0003/part-00000.csv:18").
	Where string `json:"where"`
	hash  uint64
}

// Cell is a column's value as text.
type Cell struct {
	Column string `json:"column"`
	Value  string `json:"value"`
}

// Diff is a column's value in the source (as the target would store it) and in the target.
type Diff struct {
	Column string `json:"column"`
	Source string `json:"source,omitempty"`
	Target string `json:"target"`
}

func newResult(cfg Config) *Result {
	r := &Result{Mapping: cfg.Program.Name(), Table: cfg.Program.Table(), RejectCodes: map[string]int64{}, SkippedCodes: map[string]int64{},
		differ: map[string]int64{}, Sample: "all", TargetKind: "folder", DifferColumns: []ColumnCount{}, Files: []FileRows{}}
	switch {
	case cfg.Sample.Rows > 0:
		r.Sample = fmt.Sprintf("%d rows", cfg.Sample.Rows)
	case cfg.Sample.Fraction > 0 && cfg.Sample.Fraction < 1:
		r.Sample = fmt.Sprintf("%g%%", cfg.Sample.Fraction*100)
	}
	if cfg.Lookup != nil {
		r.TargetKind, r.ExtraScope = "lookup", ExtraNone
	} else {
		var zero int64
		r.Extra, r.ExtraScope = &zero, ExtraAll
	}
	r.Examples = Examples{Missing: []Example{}, Differ: []Example{}, Extra: []Example{}}
	return r
}

// counts are a bucket's figures, merged into the Result.
type counts struct {
	checked, keys, overwritten, targetRows int64
	deleted                                int64 // keys the changes leave without a row
	lost                                   int64 // overwritten rows unlike the row that replaced them
	missing, differ, extra                 int64
}

// bucketResult is one bucket's share of the exact comparison.
type bucketResult struct {
	counts
	differ1 map[int]int64 // per row column index
	ex      Examples
	// with Config.Repair: the keys to write again, and those of target rows the source has not
	repair    []string
	extraKeys [][]Cell
}

func (r *Result) addCounts(c counts) {
	r.RowsChecked += c.checked
	r.KeysChecked += c.keys
	r.KeysDeleted += c.deleted
	r.RowsOverwritten += c.overwritten
	r.RowsLost += c.lost
	r.TargetRows += c.targetRows
	r.Missing += c.missing
	r.Differ += c.differ
	if r.Extra != nil {
		*r.Extra += c.extra
	}
}

func (r *Result) add(b *bucketResult, rowCols []string) {
	r.addCounts(b.counts)
	for c, n := range b.differ1 {
		r.differ[rowCols[c]] += n
	}
	for _, k := range b.repair {
		if r.repairKeys == nil {
			r.repairKeys = map[string]struct{}{}
		}
		r.repairKeys[k] = struct{}{}
	}
	r.ExtraKeys = append(r.ExtraKeys, b.extraKeys...)
	r.Examples.Missing = keepSmallest(append(r.Examples.Missing, b.ex.Missing...))
	r.Examples.Differ = keepSmallest(append(r.Examples.Differ, b.ex.Differ...))
	r.Examples.Extra = keepSmallest(append(r.Examples.Extra, b.ex.Extra...))
}

// keepSmallest keeps the maxExamples examples of the smallest key hashes (then positions).
func keepSmallest(ex []Example) []Example {
	sort.SliceStable(ex, func(i, j int) bool {
		if ex[i].hash != ex[j].hash {
			return ex[i].hash < ex[j].hash
		}
		return ex[i].Where < ex[j].Where
	})
	if len(ex) > maxExamples {
		ex = ex[:maxExamples]
	}
	return ex
}

func (r *Result) finish(took time.Duration) {
	for c, n := range r.differ {
		r.DifferColumns = append(r.DifferColumns, ColumnCount{Column: c, Rows: n})
	}
	sort.Slice(r.DifferColumns, func(i, j int) bool {
		a, b := r.DifferColumns[i], r.DifferColumns[j]
		if a.Rows != b.Rows {
			return a.Rows > b.Rows
		}
		return a.Column < b.Column
	})
	sort.Slice(r.Files, func(i, j int) bool { return r.Files[i].Path < r.Files[j].Path })
	// nothing checked is not equal: no key was looked up, and the target's rows were not all read
	// (a key the changes delete is looked up too: it must be absent)
	checked := r.KeysChecked > 0 || r.KeysDeleted > 0 || r.ExtraScope == ExtraAll
	r.Equal = checked && r.Missing == 0 && r.Differ == 0 && (r.Extra == nil || *r.Extra == 0) && len(r.Files) == 0 && r.ChangesSkipped == 0 &&
		r.Unsettled == ""
	r.Seconds = took.Seconds()
	if r.Seconds > 0 {
		r.RowsPerSec = float64(r.RowsRead) / r.Seconds
	}
}

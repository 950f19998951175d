// Package lindorm is Lindorm's dialect: the files that go next to the data, the table DDL
// (ddl.sql) and the LTS bulkload job config (bulkload.json), a finished run's manifest
// (output.Manifest) with them (Finals), and the next steps printed after a run.
package lindorm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
)

// plainIdent is an identifier Lindorm SQL reads unquoted: a letter, then letters, digits and
// underscores (Lindorm SQL's lexical structure).
var plainIdent = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// reserved are words Lindorm SQL (and SQL in general) may read as keywords: always back-quoted.
// They are the keywords LindormTable's SQL reference says to back-quote (the part of its list
// from ADD to NORMAL_USER; UNCERTAIN: the rest of that list, beyond the common SQL words here),
// with the SQL words rekey quoted before.
var reserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`ALL ALTER AND AS ASC BETWEEN BY CASE CAST COLUMN CONSTRAINT
		CREATE CROSS CURRENT DATE DEFAULT DELETE DESC DISTINCT DROP ELSE END EXISTS FALSE FOR FROM FULL
		GROUP HAVING IF IN INDEX INNER INSERT INTERVAL INTO IS JOIN KEY LEFT LIKE LIMIT NOT NULL OFFSET
		ON OR ORDER OUTER PRIMARY RIGHT SELECT SET TABLE THEN TIME TIMESTAMP TO TRUE UNION UNIQUE UPDATE
		UPSERT USING VALUE VALUES WHEN WHERE WITH
		ADD ADMIN_USER ADMIN_TRASH ALLOW ANALYZE ANY ARRAY ASYNC AT BERNOULLI BUILD CALL CALLED CASCADE
		CATALOGS COLUMNS COMMENT COMMIT COMMITTED SEARCH SEARCH_QUERY INCLUDE CUBE CURRENT_DATE
		CURRENT_ROLE CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER DATA DATABASE DATABASES DAY DEALLOCATE
		DEFINER DESCRIBE DETERMINISTIC DISTRIBUTED DUPLICATE ESCAPE EXCEPT EXCLUDING EXECUTE EXPLAIN
		EXTRACT EXTERNAL FILTER FILTERING FIRST FOLLOWING FORCE FORMAT FUNCTION FUNCTIONS GLOBAL GRANT
		GRANTED GRANTS GRAPHVIZ GROUPING HOUR IDENTIFIED IGNORE INCLUDING INPUT INTERSECT INVOKER IO
		ISOLATION JSON LANGUAGE LAST LATERAL LEVEL LOCALTIME LOCALTIMESTAMP LOGICAL MAP MINUTE MONTH NAME
		NAMESPACE NAMESPACES NATURAL NFC NFD NFKC NFKD NO NONE NORMAL_USER`) {
		reserved[w] = true
	}
}

// Ident renders an identifier: as is when plain, back-quoted otherwise (a back-quote inside is
// doubled): log-event -> `log-event`, order -> `order`.
func Ident(name string) string {
	if plainIdent.MatchString(name) && !reserved[strings.ToUpper(name)] {
		return name
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// quote renders a SQL string literal: single quotes doubled (for text DDL checked with
// pipeline.PlainSQLText).
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// splitKeyOptions are the pre-split options DDL writes itself from the plan.
var splitKeyOptions = map[string]bool{"SPLITKEYS": true, "NUMREGIONS": true, "STARTKEY": true, "ENDKEY": true}

// DDL renders the CREATE TABLE statement for the target schema and region plan:
//
//	CREATE TABLE IF NOT EXISTS orders (
//	  pk1 VARCHAR NOT NULL,
//	  ...
//	  PRIMARY KEY(pk1, orderid DESC)
//	) WITH (SPLITKEYS='1000,2000,...', COMPRESSION='ZSTD');
//
// Key columns are NOT NULL. SPLITKEYS lists the plan's split values typed like the first key
// column (see pipeline.SplitValue) and is left out for a single region; a pre-split option among options
// (SPLITKEYS, NUMREGIONS, STARTKEY, ENDKEY) is ignored, the plan decides. Every option value is
// a quoted string, in the order given, with its quotes doubled.
//
// ddl.sql is run by a client whose escape rules rekey does not know (backslash escapes on or
// off), so every literal must read the same under both: DDL refuses a split value SPLITKEYS
// cannot carry (pipeline.SplitTextProblem: a comma, which its syntax cannot escape, a backslash,
// a control character) and an option value that is not pipeline.PlainSQLText, rather than write
// it. The planner never chooses such a split point (transform's quantile plan takes the next
// sample value without one); explicit split_keys and options holding one are refused when the
// mapping is read. UNCERTAIN: that Lindorm reads a doubled quote inside a split point as one
// quote, as standard SQL does. Split keys of a TIMESTAMP first column (UTC text) follow a
// SET time_zone = '+00:00' (timestampSplitsHeader).
func DDL(schema pipeline.TargetSchema, plan pipeline.RegionPlan, options [][2]string) (string, error) {
	if err := CheckSplitKeys(plan); err != nil {
		return "", err
	}
	for _, o := range options {
		if ok, why := pipeline.PlainSQLText(o[1]); !ok {
			return "", fmt.Errorf("lindorm: option %s holds %s, which ddl.sql cannot write as a quoted string that reads the same with and without backslash escapes: change the mapping's target.options", o[0], why)
		}
	}
	var opts []string
	if len(plan.Splits) > 0 {
		vals := make([]string, len(plan.Splits))
		for i, v := range plan.Splits {
			vals[i] = pipeline.SplitValue(plan.Type, v)
		}
		opts = append(opts, "SPLITKEYS="+quote(strings.Join(vals, ",")))
	}
	for _, o := range options {
		if splitKeyOptions[strings.ToUpper(o[0])] {
			continue
		}
		opts = append(opts, o[0]+"="+quote(o[1]))
	}
	ddl := CreateTable(schema, lindormTable, opts)
	if plan.Type == pipeline.TypeTimestamp && len(plan.Splits) > 0 {
		ddl = timestampSplitsHeader + ddl
	}
	return ddl, nil
}

// timestampSplitsHeader goes before a CREATE TABLE whose SPLITKEYS hold TIMESTAMP values: they
// are written in UTC, and a Lindorm session reads a TIMESTAMP string in its own time zone (UTC+8
// by default), which would move every split point by the zone's offset away from the instants
// the files were cut at. UNCERTAIN: whether Lindorm reads SPLITKEYS in the session's zone at all;
// with the session in UTC they mean the same either way. SET time_zone needs LindormTable 2.7.6
// or later (as rekey's SQL sessions and replicate's delete files do).
const timestampSplitsHeader = "-- rekey: SPLITKEYS holds TIMESTAMP values in UTC: run this file in one session, after the SET.\n" +
	"SET time_zone = '+00:00';\n"

// TableDialect is how a SQL dialect writes a CREATE TABLE: Lindorm's (ddl.sql), or a
// MySQL-protocol server's for the mysql:// twin of a Lindorm table (sink/sqlsink).
type TableDialect struct {
	Ident func(name string) string       // an identifier
	Type  func(c pipeline.Column) string // a column's type
	// KeyOrder writes DESC after a descending key column (MySQL, which ignores it, gets none)
	KeyOrder bool
	// KeySpace writes "PRIMARY KEY (" where Lindorm's ddl.sql has "PRIMARY KEY("
	KeySpace bool
}

// lindormTable is Lindorm's dialect.
var lindormTable = TableDialect{Ident: Ident, Type: pipeline.Column.SQLType, KeyOrder: true}

// CreateTable renders CREATE TABLE IF NOT EXISTS of schema in dialect d: its columns in order,
// the key columns NOT NULL, the primary key in key order, then WITH (options) when there are
// options (each NAME='value', rendered by the caller).
func CreateTable(schema pipeline.TargetSchema, d TableDialect, options []string) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS ")
	b.WriteString(d.Ident(schema.Table))
	b.WriteString(" (\n")
	for _, c := range schema.Columns {
		b.WriteString("  ")
		b.WriteString(d.Ident(c.Name))
		b.WriteByte(' ')
		b.WriteString(d.Type(c))
		if c.IsKey() {
			b.WriteString(" NOT NULL")
		}
		b.WriteString(",\n")
	}
	b.WriteString("  PRIMARY KEY")
	if d.KeySpace {
		b.WriteByte(' ')
	}
	b.WriteByte('(')
	for i, c := range schema.Key() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.Ident(c.Name))
		if c.Desc && d.KeyOrder {
			b.WriteString(" DESC")
		}
	}
	b.WriteString(")\n)")
	if len(options) > 0 {
		b.WriteString(" WITH (")
		b.WriteString(strings.Join(options, ", "))
		b.WriteString(")")
	}
	b.WriteString(";\n")
	return b.String()
}

// CheckSplitKeys reports split values DDL cannot write (pipeline.SplitTextProblem).
func CheckSplitKeys(plan pipeline.RegionPlan) error {
	for i, v := range plan.Splits {
		s := pipeline.SplitValue(plan.Type, v)
		if why := pipeline.SplitTextProblem(s); why != "" {
			return fmt.Errorf("lindorm: split key %d %q holds %s: choose split keys without it (regions.split_keys), or fewer regions", i, s, why)
		}
	}
	return nil
}

// Table is what the final files of a run say about the table it was written for.
type Table struct {
	Schema      pipeline.TargetSchema
	Options     [][2]string // the mapping's table options, for the DDL
	Mapping     string      // the mapping's name
	Fingerprint string      // of the resolved mapping
	RegionSize  int64       // the configured region size in bytes (0: none)
	Version     string      // rekey's, recorded in the manifest
	// WriteTime: the files are in time slices (target.write_time), each loaded by a job of its
	// own; bulkload.json is then a list of jobs, oldest first.
	WriteTime bool
}

// Finals are the final files of a run whose source was read to its end: its manifest (plan,
// files and counts of res; nextSince, when not zero, the since= of the next catch-up), and the
// files output.Finish writes before it, ddl.sql and bulkload.json (the job reads the output
// jobOpt.Out names, in a bucket when output.InBucket says so). It returns bulkload.json's jobs too:
// one, or with t.WriteTime one per time slice (SliceJobs).
func Finals(t Table, plan pipeline.RegionPlan, format string, res pipeline.Result, nextSince time.Time,
	jobOpt JobOptions) (*output.Manifest, []output.File, []*BulkloadJob, error) {
	m := output.NewManifest(t.Schema, plan, format, t.RegionSize)
	m.Mapping, m.MappingFingerprint, m.RekeyVersion = t.Mapping, t.Fingerprint, t.Version
	if err := m.AddFiles(res.Files); err != nil {
		return nil, nil, nil, err
	}
	m.RowsIn, m.RowsWritten, m.RowsRejected, m.RowsSkipped = res.RowsIn, res.RowsWritten, res.RowsRejected, res.RowsSkipped
	if !nextSince.IsZero() {
		m.NextSince = &nextSince
	}
	ddl, err := DDL(t.Schema, plan, t.Options)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("write %s: %w", output.DDLFile, err)
	}
	jobOpt.Regions, jobOpt.Timestamp, jobOpt.DataDir = plan.Count(), res.StartedAt, output.DataDir
	var jobs []*BulkloadJob
	var doc any // bulkload.json: the job, or the list of a run in time slices
	if t.WriteTime {
		if jobs, err = SliceJobs(t.Schema, res, jobOpt); err != nil {
			return nil, nil, nil, fmt.Errorf("bulkload config: %w", err)
		}
		doc = jobs
	} else {
		job, err := NewBulkloadJob(t.Schema, jobOpt)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("bulkload config: %w", err)
		}
		jobs, doc = []*BulkloadJob{job}, job
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bulkload config: %w", err)
	}
	files := []output.File{{Name: output.DDLFile, Data: []byte(ddl + "\n")}, {Name: output.BulkloadFile, Data: append(data, '\n')}}
	return m, files, jobs, nil
}

// SliceJobs are the bulkload jobs of a run in time slices (target.write_time), oldest first: one
// per slice of res.Files, reading only that slice's files, its writerConfig.timestamp the newest
// write time of the slice's rows, at most the run's start (the run's start too for the rows
// without a write time). The cap keeps a stamp no later than the copy read any of the slice's
// rows: a slice's rows are read over the whole run, and a stamp taken from a row written after
// an earlier row was read would beat the change that made that later write time to the earlier
// row (replicate applies it at its own time), leaving the older copy. Lindorm keeps the cell of
// the newest timestamp whatever the load order, so the order matters only for cells of equal
// timestamps, where the later load wins.
func SliceJobs(schema pipeline.TargetSchema, res pipeline.Result, jobOpt JobOptions) ([]*BulkloadJob, error) {
	started := res.StartedAt.UnixMilli()
	newest := map[int64]int64{}
	for _, f := range res.Files {
		start, ok := output.FileSlice(f.Path)
		if !ok {
			return nil, fmt.Errorf("data file %s belongs to no time slice, as every file of a run with target.write_time does: "+
				"the output mixes runs; start over in an empty --out", f.Path)
		}
		t := f.NewestTime
		if !res.StartedAt.IsZero() {
			t = min(t, started)
		}
		if start < 0 {
			t = started
		}
		newest[start] = max(newest[start], t)
	}
	starts := make([]int64, 0, len(newest))
	for s := range newest {
		starts = append(starts, s)
	}
	sort.Slice(starts, func(a, b int) bool {
		if newest[starts[a]] != newest[starts[b]] {
			return newest[starts[a]] < newest[starts[b]]
		}
		return starts[a] < starts[b] // slices stamped alike (the run's start) in their order
	})
	jobs := make([]*BulkloadJob, 0, len(starts))
	for _, s := range starts {
		opt := jobOpt
		opt.Slice, opt.Timestamp = output.SliceFilePrefix(s), time.UnixMilli(newest[s])
		job, err := NewBulkloadJob(schema, opt)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

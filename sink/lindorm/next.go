package lindorm

import (
	"encoding/json"
	"fmt"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// NextRun is what the "Next steps" block needs to know about a finished run.
type NextRun struct {
	Out         string // --out as given: a local folder or s3://BUCKET/PREFIX, oss://BUCKET/PREFIX
	RowsWritten int64
	Mapping     string // -m, for the verify command
	Source      string // --source, for the verify command
	// NextSince, when set, is the since= of the next catch-up and CatchupSource the --source
	// that reads it (a Cassandra source).
	NextSince     time.Time
	CatchupSource string
	// Shard, when set, is the shard of a migration read in N shards: its next step is to finish
	// them all, not the bulk load yet. With SharedOut the N shards write one output together
	// (--shared-out) and merge --out finishes it; otherwise merge combines the N outputs.
	Shard     *pipeline.Shard
	SharedOut bool
}

// NextSteps is the short block printed after a migration: create the table, where the files
// are, how to submit the bulkload job (console path and a ready curl form post of job's fields)
// and how to check the counts. Host names and credentials are placeholders: LINDORM_HOST,
// LTS_MASTER and the environment variables $LINDORM_USER, $LTS_USER, $LTS_PASSWORD. jobs are
// bulkload.json's: one, or with target.write_time one per time slice, oldest first.
func NextSteps(jobs []*BulkloadJob, run NextRun) string {
	var b strings.Builder
	if run.Shard != nil && !run.SharedOut {
		b.WriteString("Next steps\n")
		fmt.Fprintf(&b, "  Shard %s is complete. Once every shard 0..%d of the migration is (each in its own --out), merge\n"+
			"  them into one bulk-load set (files hard-linked on one filesystem, copied otherwise):\n", run.Shard, run.Shard.Count-1)
		outs := make([]string, run.Shard.Count)
		for i := range outs {
			outs[i] = fmt.Sprintf("SHARD_%d_OUT", i)
		}
		outs[run.Shard.Index] = shellQuote(run.Out)
		fmt.Fprintf(&b, "       rekey merge %s --out MERGED_OUT\n", strings.Join(outs, " "))
		fmt.Fprintf(&b, "  It writes %s, %s and %s there and prints the next steps: create the table\n"+
			"  and submit the bulkload job as after a single run (docs/outputs.md).\n", output.DDLFile, output.BulkloadFile, output.ManifestFile)
		return b.String()
	}
	if run.Shard != nil {
		b.WriteString("Next steps\n")
		fmt.Fprintf(&b, "  Shard %s is complete. Once every shard 0..%d of the migration is, finish them (metadata only: the\n"+
			"  data files stay where the shards wrote them):\n", run.Shard, run.Shard.Count-1)
		fmt.Fprintf(&b, "       rekey merge --out %s\n", shellQuote(run.Out))
		fmt.Fprintf(&b, "  It writes %s, %s and %s there: create the table and submit the bulkload job as after a\n"+
			"  single run (docs/outputs.md).\n", output.DDLFile, output.BulkloadFile, output.ManifestFile)
		return b.String()
	}
	bucket := output.InBucket(run.Out) // s3://, oss://
	loc := run.Out
	if bucket {
		loc = output.BucketLocation(run.Out)
	}
	if len(jobs) == 0 || run.RowsWritten == 0 {
		// no data file: a job would read a glob that names none
		b.WriteString("Next steps\n")
		ddl := shellQuote(filepath.Join(run.Out, output.DDLFile))
		if bucket { // an object, not a local path: fetched as after a run that wrote rows
			ddl = output.DDLFile + " (" + output.CopyCommand(run.Out) + " " + shellQuote(loc+"/"+output.DDLFile) + " " + output.DDLFile + ")"
		}
		why := output.BulkloadFile + " lists no job"
		if len(jobs) > 0 {
			why = output.DataDir + "/ holds no file: do not submit " + output.BulkloadFile + "'s job, which would read none"
		}
		fmt.Fprintf(&b, "  No row was written, so there is nothing to load (%s); %s creates the table.\n", why, ddl)
		writeCatchup(&b, 0, run)
		return b.String()
	}
	job := jobs[0]
	ns := job.WriterConfig.Namespace
	b.WriteString("Next steps\n")
	// 1. the table
	ddl := shellQuote(filepath.Join(run.Out, output.DDLFile))
	if bucket {
		fetch := output.CopyCommand(run.Out) + " " + shellQuote(loc+"/"+output.DDLFile) + " " + output.DDLFile
		fmt.Fprintf(&b, "  1. Create the table: %s\n", fetch)
		ddl = output.DDLFile
	} else {
		b.WriteString("  1. Create the table (Lindorm SQL, MySQL protocol on port 33060; or paste ddl.sql into lindorm-cli):\n")
	}
	fmt.Fprintf(&b, "       mysql -h LINDORM_HOST -P 33060 -u \"$LINDORM_USER\" -p -D %s < %s\n", shellQuote(ns), ddl)
	// 2. the files
	dataDir, rest, _ := strings.Cut(job.ReaderConfig.FilePath, RegionGlob)
	if len(jobs) > 1 {
		rest = "w...-* (each job's own slice)"
	}
	if bucket {
		fmt.Fprintf(&b, "  2. Data files: %s/%s/ (filePath %q: the LTS source must be this bucket)\n", loc, output.DataDir, job.ReaderConfig.FilePath)
	} else {
		fmt.Fprintf(&b, "  2. Data files: %s; upload that folder to the OSS bucket or HDFS of an LTS data source and set\n"+
			"     readerConfig.filePath (bulkload.json, the curl below) to its path there + %s, or write there: --out oss://BUCKET/PREFIX\n",
			dataDir, RegionGlob+rest)
	}
	if len(jobs) > 1 || strings.HasSuffix(job.ReaderConfig.FilePath, "*") {
		writeSliceJobs(&b, jobs)
	} else {
		writeJob(&b, job)
	}
	// 4. the counts
	return b.String() + countSteps(job, run)
}

// writeJob is step 3 of the next steps: submit the one job.
func writeJob(b *strings.Builder, job *BulkloadJob) {
	b.WriteString("  3. Submit the job with bulkload.json's fields: LTS console > Data Source Management > Add Data Source (the\n" +
		"     OSS/HDFS source and LindormTable), then Import to Lindorm/HBase > Universal Import > Create task; or the API:\n")
	fmt.Fprintf(b, "       %s\n", curlCommand(job))
	if job.Src == SourcePlaceholder || job.Dst == TargetPlaceholder {
		b.WriteString("     src/dst are placeholders: put your LTS data-source names there (--lts-source, --lts-target)\n")
	}
	b.WriteString("     Read bulkload.json's rekey_uncertain list first; try one region before the whole table.\n")
}

// writeSliceJobs is step 3 of the next steps of a run in time slices: submit each job in turn.
func writeSliceJobs(b *strings.Builder, jobs []*BulkloadJob) {
	fmt.Fprintf(b, "  3. Submit the %d jobs of bulkload.json (a list: one per time slice of the rows' write times, each stamping its\n"+
		"     cells with the slice's newest write time, at most the run's start), oldest first, each as one job: LTS console > Import to\n"+
		"     Lindorm/HBase > Universal Import > Create task with its fields, or the API. Lindorm keeps the newest\n"+
		"     timestamp of a cell whatever the order; the order matters only for equal timestamps (the later load wins):\n", len(jobs))
	for i, job := range jobs {
		fmt.Fprintf(b, "       # job %d: files %s, timestamp %s\n", i+1, job.ReaderConfig.FilePath, time.UnixMilli(*job.WriterConfig.Timestamp).UTC().Format(time.RFC3339Nano))
		fmt.Fprintf(b, "       %s\n", curlCommand(job))
	}
	if jobs[0].Src == SourcePlaceholder || jobs[0].Dst == TargetPlaceholder {
		b.WriteString("     src/dst are placeholders: put your LTS data-source names there (--lts-source, --lts-target)\n")
	}
	b.WriteString("     Read each job's rekey_uncertain list first; try one region of the first job before the whole table.\n")
}

// countSteps are the steps after the load: check the counts, catch up.
func countSteps(job *BulkloadJob, run NextRun) string {
	var b strings.Builder
	ns := job.WriterConfig.Namespace
	// 4. the counts
	// rekey verify, not SELECT COUNT(*): the guide warns that COUNT scans the whole table
	fmt.Fprintf(&b, "  4. Check that %s.%s holds the %d rows written, key by key (--sample 1%% on a large table):\n",
		Ident(ns), Ident(job.WriterConfig.LindormTable), run.RowsWritten)
	mapping, source := shellQuote(run.Mapping), shellQuote(run.Source)
	if run.Mapping == "" || run.Source == "" { // a merge: its inputs' runs knew them
		mapping, source = "MAPPING", "SOURCE"
	}
	fmt.Fprintf(&b, "       rekey verify -m %s --source %s --target lindorm://LINDORM_USER@LINDORM_HOST:33060/%s\n",
		mapping, source, url.PathEscape(ns))
	if run.Mapping == "" || run.Source == "" {
		b.WriteString("     (MAPPING and SOURCE: the mapping and the --source the merged runs read, without --shard;\n" +
			"     not SELECT COUNT(*): it scans the whole table)\n")
	} else {
		b.WriteString("     (not SELECT COUNT(*): it scans the whole table)\n")
	}
	// 5. the next catch-up
	writeCatchup(&b, 5, run)
	return b.String()
}

// writeCatchup is step n (0: unnumbered) of the next steps of a catch-up source (run.NextSince
// set): the next catch-up's command.
func writeCatchup(b *strings.Builder, n int, run NextRun) {
	if run.NextSince.IsZero() {
		return
	}
	step := "  "
	if n > 0 {
		step += fmt.Sprintf("%d. ", n)
	}
	fmt.Fprintf(b, "%sCatch up later with the rows written since this run started (since=%s: its start less a\n"+
		"     margin for clock skew; deletes are not caught up), into a new output:\n", step, run.NextSince.Format(time.RFC3339))
	fmt.Fprintf(b, "       %s\n", CatchupCommand(run.Mapping, run.CatchupSource, "--out", "NEW_OUT"))
}

// CatchupCommand is the migrate command line of the next catch-up: the mapping, the source
// with its since= set, then the output arguments; each argument quoted for a POSIX shell.
func CatchupCommand(mapping, source string, out ...string) string {
	args := []string{"rekey migrate -m", shellQuote(mapping), "--source", shellQuote(source)}
	for _, a := range out {
		args = append(args, shellQuote(a))
	}
	return strings.Join(args, " ")
}

// curlCommand is the API call that submits job: a form post, each field URL-encoded by curl.
func curlCommand(job *BulkloadJob) string {
	reader, _ := json.Marshal(job.ReaderConfig) // plain structs: cannot fail
	writer, _ := json.Marshal(job.WriterConfig)
	fields := [][2]string{
		{"src", job.Src}, {"dst", job.Dst}, {"fileType", job.FileType},
		{"driverSpec", job.DriverSpec}, {"instances", fmt.Sprint(job.Instances)},
		{"readerConfig", string(reader)}, {"writerConfig", string(writer)},
	}
	var b strings.Builder
	b.WriteString(`curl -sS -u "$LTS_USER:$LTS_PASSWORD" -X POST http://LTS_MASTER:12311/pro/proc/bulkload/create`)
	for _, f := range fields {
		b.WriteString(" --data-urlencode ")
		b.WriteString(shellQuote(f[0] + "=" + f[1]))
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

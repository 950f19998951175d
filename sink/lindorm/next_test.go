package lindorm_test

import (
	"encoding/json"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sinktest"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

// After a migrate, a short "Next steps" block says how to create the table, where the files are,
// how to submit the job (console path and a ready curl form post of bulkload.json's fields) and how
// to check the counts.
func TestNextStepsStore(t *testing.T) {
	job, err := lindorm.NewBulkloadJob(sinktest.OrdersSchema(), lindorm.JobOptions{DataDir: "data", FileType: "Parquet", Out: "oss://bkt/runs/o'rders?endpoint=oss-cn-hangzhou.aliyuncs.com",
		Store: true, Source: "oss src", Target: "ld", Namespace: "shop", Regions: 8})
	if err != nil {
		t.Fatal(err)
	}
	got := lindorm.NextSteps([]*lindorm.BulkloadJob{job}, lindorm.NextRun{Out: "oss://bkt/runs/o'rders?endpoint=oss-cn-hangzhou.aliyuncs.com",
		RowsWritten: 1234, Mapping: "mappings/orders.yaml", Source: "file:orders.csv"})
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) > 15 {
		t.Errorf("%d lines, want at most 15:\n%s", len(lines), got)
	}
	for _, want := range []string{
		"Next steps",
		`ossutil cp -e oss-cn-hangzhou.aliyuncs.com 'oss://bkt/runs/o'\''rders/ddl.sql' ddl.sql`,
		`mysql -h LINDORM_HOST -P 33060 -u "$LINDORM_USER" -p -D shop < ddl.sql`,
		`Data files: oss://bkt/runs/o'rders/data/ (filePath "runs/o'rders/data/*/"`,
		"Data Source Management > Add Data Source",
		"Import to Lindorm/HBase > Universal Import > Create task",
		`curl -sS -u "$LTS_USER:$LTS_PASSWORD" -X POST http://LTS_MASTER:12311/pro/proc/bulkload/create`,
		"rekey_uncertain",
		"4. Check that shop.orders holds the 1234 rows written, key by key (--sample 1% on a large table):",
		"rekey verify -m mappings/orders.yaml --source file:orders.csv --target lindorm://LINDORM_USER@LINDORM_HOST:33060/shop",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("block lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "endpoint=") || strings.Contains(got, "placeholders") {
		t.Errorf("query or placeholder note shown:\n%s", got)
	}
	// The curl line, run by a shell with curl stubbed, posts exactly the job's fields.
	var curl string
	for _, l := range lines {
		if strings.Contains(l, "curl ") {
			curl = strings.TrimSpace(l)
		}
	}
	out, err := exec.Command("sh", "-c", `curl() { for a; do printf '%s\0' "$a"; done; }; `+curl).Output()
	if err != nil {
		t.Fatalf("sh: %v\n%s", err, curl)
	}
	args := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	form := map[string]string{}
	for i, a := range args {
		if a == "--data-urlencode" {
			k, v, _ := strings.Cut(args[i+1], "=")
			form[k] = v
		}
	}
	reader, _ := json.Marshal(job.ReaderConfig)
	writer, _ := json.Marshal(job.WriterConfig)
	want := map[string]string{"src": "oss src", "dst": "ld", "fileType": "Parquet", "driverSpec": "large", "instances": "2",
		"readerConfig": string(reader), "writerConfig": string(writer)}
	if !reflect.DeepEqual(form, want) {
		t.Errorf("form fields\n%v\nwant\n%v", form, want)
	}
}

func TestNextStepsLocalWithPlaceholders(t *testing.T) {
	dir := t.TempDir()
	job, err := lindorm.NewBulkloadJob(sinktest.OrdersSchema(), lindorm.JobOptions{DataDir: "data", FileType: "CSV", Out: dir, Regions: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := lindorm.NextSteps([]*lindorm.BulkloadJob{job}, lindorm.NextRun{Out: dir, RowsWritten: 7, Mapping: "m.yaml", Source: "gen:orders?rows=7"})
	if n := strings.Count(got, "\n"); n > 15 {
		t.Errorf("%d lines:\n%s", n, got)
	}
	for _, want := range []string{
		"-D default < " + dir + "/ddl.sql",
		"Data files: " + dir + "/data/; upload",
		"src/dst are placeholders",
		"4. Check that `default`.orders holds the 7 rows written",
		"--source 'gen:orders?rows=7'",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("block lacks %q:\n%s", want, got)
		}
	}
}

// The check step suggests rekey verify and never a SELECT COUNT(*), which scans the whole table
// (the wide-table guide's warning).
func TestNextStepsCheckWithVerifyNotCount(t *testing.T) {
	job := &lindorm.BulkloadJob{WriterConfig: lindorm.WriterConfig{Namespace: "shop", LindormTable: "orders"}}
	got := lindorm.NextSteps([]*lindorm.BulkloadJob{job}, lindorm.NextRun{Out: "out", RowsWritten: 5, Mapping: "m.yaml", Source: "file:o.csv"})
	if strings.Contains(got, "SELECT COUNT(*) FROM") || !strings.Contains(got, "rekey verify -m m.yaml") {
		t.Fatalf("the check step:\n%s", got)
	}
}

// A shard of a shared output is not loaded on its own: its next step is the finishing step on
// the shared --out (quoted for the shell), not the bulkload job.
func TestNextStepsOfASharedShard(t *testing.T) {
	job, err := lindorm.NewBulkloadJob(sinktest.OrdersSchema(), lindorm.JobOptions{DataDir: "data", FileType: "Parquet", Out: "out dir", Regions: 1})
	if err != nil {
		t.Fatal(err)
	}
	text := lindorm.NextSteps([]*lindorm.BulkloadJob{job}, lindorm.NextRun{Out: "out dir", Shard: &pipeline.Shard{Index: 1, Count: 4}, SharedOut: true})
	if !strings.Contains(text, "Shard 1/4 is complete") || !strings.Contains(text, "rekey merge --out 'out dir'\n") || strings.Contains(text, "curl") {
		t.Errorf("next steps of a shard:\n%s", text)
	}
	// writing its own --out, a shard's next step is the merge of the N outputs, its own named
	text = lindorm.NextSteps([]*lindorm.BulkloadJob{job}, lindorm.NextRun{Out: "out dir", Shard: &pipeline.Shard{Index: 1, Count: 4}})
	if !strings.Contains(text, "rekey merge SHARD_0_OUT 'out dir' SHARD_2_OUT SHARD_3_OUT --out MERGED_OUT\n") || strings.Contains(text, "curl") {
		t.Errorf("next steps of a shard in its own --out:\n%s", text)
	}
}

// A run in time slices that wrote no row has no job to submit: the next steps say so instead of
// printing a job.
func TestNextStepsWithoutJobs(t *testing.T) {
	got := lindorm.NextSteps(nil, lindorm.NextRun{Out: "out", Mapping: "m.yaml", Source: "cassandra://h/ks/t"})
	if !strings.Contains(got, "No row was written, so there is nothing to load (bulkload.json lists no job)") || strings.Contains(got, "curl") {
		t.Errorf("next steps without jobs:\n%s", got)
	}
}

// The same in a bucket: the DDL is named by the object's location and fetched as after a run
// that wrote rows, not by a local path made of the URI (s3:/bkt/..., with its query).
func TestNextStepsWithoutJobsInABucket(t *testing.T) {
	got := lindorm.NextSteps(nil, lindorm.NextRun{Out: "s3://bkt/runs/orders?region=us-west-2", Mapping: "m.yaml", Source: "cassandra://h/ks/t"})
	if !strings.Contains(got, "aws s3 cp s3://bkt/runs/orders/ddl.sql ddl.sql") || strings.Contains(got, "s3:/bkt") || strings.Contains(got, "region=") {
		t.Errorf("next steps without jobs, in a bucket:\n%s", got)
	}
}

// A bucket on an S3-compatible server (--out s3://...?endpoint=...) is fetched from that server:
// the copy command names the endpoint, or the AWS CLI would ask AWS for a bucket of that name.
func TestNextStepsFetchFromTheEndpoint(t *testing.T) {
	out := "s3://bkt/runs/orders?endpoint=http://127.0.0.1:7070&path_style=true"
	job, err := lindorm.NewBulkloadJob(sinktest.OrdersSchema(), lindorm.JobOptions{DataDir: "data", FileType: "Parquet", Out: out, Regions: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []string{
		lindorm.NextSteps([]*lindorm.BulkloadJob{job}, lindorm.NextRun{Out: out, RowsWritten: 3, Mapping: "m.yaml", Source: "file:o.csv"}),
		lindorm.NextSteps(nil, lindorm.NextRun{Out: out, Mapping: "m.yaml", Source: "file:o.csv"}),
	} {
		if !strings.Contains(got, "aws s3 cp --endpoint-url http://127.0.0.1:7070 s3://bkt/runs/orders/ddl.sql ddl.sql") {
			t.Errorf("next steps of a bucket on an S3-compatible server:\n%s", got)
		}
	}
}

// A bucket on OSS is fetched from its region: the ossutil command names the endpoint --out
// gives or the region implies (OSS's own host, not the S3 API's s3.oss-... one), or ossutil
// would ask the endpoint of its configuration, another region's for a bucket elsewhere.
func TestNextStepsOSSFetchFromTheRegion(t *testing.T) {
	for out, want := range map[string]string{
		"oss://bkt/runs/orders?region=cn-beijing":                                         "ossutil cp -e oss-cn-beijing.aliyuncs.com oss://bkt/runs/orders/ddl.sql ddl.sql",
		"oss://bkt/runs/orders?endpoint=https://s3.oss-cn-hangzhou-internal.aliyuncs.com": "ossutil cp -e oss-cn-hangzhou-internal.aliyuncs.com oss://bkt/runs/orders/ddl.sql ddl.sql",
		"oss://bkt/runs/orders?endpoint=oss-cn-shanghai.aliyuncs.com":                     "ossutil cp -e oss-cn-shanghai.aliyuncs.com oss://bkt/runs/orders/ddl.sql ddl.sql",
		"oss://bkt/runs/orders?endpoint=http://127.0.0.1:7070&path_style=true&region=r1":  "ossutil cp -e http://127.0.0.1:7070 oss://bkt/runs/orders/ddl.sql ddl.sql",
	} {
		job, err := lindorm.NewBulkloadJob(sinktest.OrdersSchema(), lindorm.JobOptions{DataDir: "data", FileType: "Parquet", Out: out, Regions: 4})
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range []string{
			lindorm.NextSteps([]*lindorm.BulkloadJob{job}, lindorm.NextRun{Out: out, RowsWritten: 3, Mapping: "m.yaml", Source: "file:o.csv"}),
			lindorm.NextSteps(nil, lindorm.NextRun{Out: out, Mapping: "m.yaml", Source: "file:o.csv"}),
		} {
			if !strings.Contains(got, want) {
				t.Errorf("next steps of %s lack %q:\n%s", out, want, got)
			}
		}
	}
}

// A run that wrote no row (an empty source, every row rejected, a catch-up finding nothing newer)
// has a job in bulkload.json but no data file: data/ was never created. The next steps said to
// upload data/ and submit the job over data/*/, a folder that does not exist and a glob that
// names no file; they say there is nothing to load, and still give the next catch-up.
func TestNextStepsWithoutRowsLoadNothing(t *testing.T) {
	dir := t.TempDir()
	job, err := lindorm.NewBulkloadJob(sinktest.OrdersSchema(), lindorm.JobOptions{DataDir: "data", FileType: "Parquet", Out: dir, Regions: 4})
	if err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	got := lindorm.NextSteps([]*lindorm.BulkloadJob{job}, lindorm.NextRun{Out: dir, Mapping: "m.yaml", Source: "cassandra://h/ks/t",
		NextSince: since, CatchupSource: "cassandra://h/ks/t?since=2026-12-04T10:00:00Z"})
	for _, want := range []string{
		"No row was written, so there is nothing to load",
		dir + "/ddl.sql creates the table",
		"  Catch up later with the rows written since this run started (since=2026-12-04T10:00:00Z",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("next steps without rows lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "curl") || strings.Contains(got, "upload that folder") {
		t.Errorf("next steps without rows submit a job that reads no file:\n%s", got)
	}
}

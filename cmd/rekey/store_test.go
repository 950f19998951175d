package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// startVersitygw runs the real S3 server (versitygw, posix backend: objects are files under
// Dir/BUCKET/; its credentials in srv.Env, for runCLIWithEnv), or skips the test when it is not
// installed (CI installs it and sets REKEY_REQUIRE_VERSITYGW=1, which fails instead).
func startVersitygw(t *testing.T) *s3test.Server {
	t.Helper()
	return s3test.StartVersitygw(t)
}

// --out s3://... (a real S3 server) goes through the same code as a folder, with nothing local:
// data files under data/ (alone), the manifest, ddl.sql, bulkload.json (reading data/) and the
// checkpoint beside it, the rejects as checkpointed parts; interrupted (Ctrl-C) and resumed,
// every row is written once and every reject listed once; merge reads it from the bucket.
func TestMigrateToObjectStore(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Parallel()
	dir := t.TempDir()
	srv := startVersitygw(t)
	root := filepath.Join(srv.Dir, s3test.Bucket)
	out := filepath.Join(root, "run")
	// a CSV with bad rows every 1,000 rows
	var sb strings.Builder
	sb.WriteString("userid,orderid,channel,ts,status,location,amount\n")
	const rows = 300000
	for i := 0; i < rows; i++ {
		if i%1000 == 7 {
			fmt.Fprintf(&sb, "u%d,notanumber,taobao,1700000000000,PAID,X,1.00\n", i)
			continue
		}
		fmt.Fprintf(&sb, "u%d,%d,taobao,1700000000000,PAID,X,%d.25\n", i, i, i%100)
	}
	src := writeFile(t, dir, "orders.csv", sb.String())
	args := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "file:" + src, "--out", srv.URIFor("run"),
		"--progress", "never", "--checkpoint-interval", "50ms", "--max-file-size", "256KiB", "--max-rejects", "-1"}
	// interrupted once a checkpoint lists written rows and rejects parts
	sigs := make(chan os.Signal)
	withRejects := func(cp *pipeline.Checkpoint) bool { return midRun(cp) && cp.RejectParts > 0 }
	code, stdout, stderr := cliRun{env: srv.Env, signals: sigs, wrapOut: atCheckpoint(withRejects, func() { interrupt(t, sigs, syscall.SIGINT) })}.run(t, args...)
	if code != exitInterrupted {
		t.Fatalf("interrupted run: exit %d, want %d\n%s%s", code, exitInterrupted, stdout, stderr)
	}
	code, stdout, stderr = runCLIWithEnv(t, srv.Env, append(args, "--resume")...)
	if code != exitRejects {
		t.Fatalf("exit %d, want 1 (rejects)\n%s%s", code, stdout, stderr)
	}
	// the summary names where the rejects are: numbered parts, not a rejects.jsonl
	if !regexp.MustCompile(`(?m)^  rejects +s3://\S+/rejects/$`).MatchString(stdout) || strings.Contains(stdout, output.RejectsFile) {
		t.Errorf("the summary's rejects line:\n%s", stdout)
	}
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	wantRejected := int64(rows / 1000)
	if m.RowsIn != rows || m.RowsRejected != wantRejected || m.RowsWritten != rows-wantRejected {
		t.Fatalf("manifest in=%d written=%d rejected=%d", m.RowsIn, m.RowsWritten, m.RowsRejected)
	}
	checkLayoutFilePath(t, out, "run/data/*", "parquet", output.RejectsPartsDir, output.ReplayPartsDir)
	if _, err := os.Stat(filepath.Join(out, output.RejectsFile)); err == nil {
		t.Fatal("rejects.jsonl on an object store: it cannot be appended to")
	}
	var job lindorm.BulkloadJob
	data, _ := os.ReadFile(filepath.Join(out, output.BulkloadFile))
	if err := json.Unmarshal(data, &job); err != nil || !strings.HasSuffix(job.ReaderConfig.FilePath, "/data/*/") {
		t.Fatalf("bulkload.json filePath %q: %v", job.ReaderConfig.FilePath, err)
	}
	// every row once
	schema := compileFile(t, "../../mappings/orders.yaml").Target()
	seen := map[string]bool{}
	for _, r := range m.Regions {
		for _, fe := range r.Files {
			pf, err := sinktest.ReadParquet(filepath.Join(out, filepath.FromSlash(fe.Path)), schema)
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range pf.Rows {
				key := strings.Join(row[:2], "/")
				if seen[key] {
					t.Fatalf("row %s written twice", key)
				}
				seen[key] = true
			}
		}
	}
	if int64(len(seen)) != m.RowsWritten {
		t.Fatalf("%d distinct rows, the manifest says %d", len(seen), m.RowsWritten)
	}
	// every reject once, across the parts
	var positions []string
	parts, _ := filepath.Glob(filepath.Join(out, output.RejectsPartsDir, "part-*.jsonl"))
	for _, p := range parts {
		for _, line := range readLines(t, p) {
			var rj output.Reject
			if err := json.Unmarshal([]byte(line), &rj); err != nil {
				t.Fatal(err)
			}
			positions = append(positions, rj.Position)
		}
	}
	sort.Strings(positions)
	for i := 1; i < len(positions); i++ {
		if positions[i] == positions[i-1] {
			t.Fatalf("reject %s listed twice", positions[i])
		}
	}
	if int64(len(positions)) != wantRejected {
		t.Fatalf("%d rejects in %d parts, want %d", len(positions), len(parts), wantRejected)
	}
	// merge reads the run from the bucket into another prefix
	code, stdout, stderr = runCLIWithEnv(t, srv.Env, "merge", srv.URIFor("run"), "--out", srv.URIFor("merged"))
	if code != 0 {
		t.Fatalf("merge from the bucket: exit %d\n%s%s", code, stdout, stderr)
	}
	mm, err := outputtest.Manifest(filepath.Join(root, "merged"))
	if err != nil || mm.RowsWritten != m.RowsWritten || mm.Files != m.Files {
		t.Fatalf("merged manifest %+v: %v", mm, err)
	}
	if lines := readLines(t, filepath.Join(root, "merged", output.RejectsFile)); int64(len(lines)) != wantRejected {
		t.Fatalf("merged rejects: %d lines, want %d", len(lines), wantRejected)
	}
	// verify reads the merged output from the bucket: it holds what the source gives
	code, stdout, stderr = runCLIWithEnv(t, srv.Env, "verify", "-m", "../../mappings/orders.yaml", "--source", "file:"+src,
		"--target", srv.URIFor("merged"), "--progress", "never")
	if code != 0 || !strings.Contains(stdout, "EQUAL") {
		t.Fatalf("verify of the bucket: exit %d\n%s%s", code, stdout, stderr)
	}
}

// An object-store --out without credentials in the environment fails at once with one error
// naming the variables to set (never a local folder named "s3:"), exits 2 (invalid use, as a
// missing flag) and writes nothing.
func TestObjectStoreWithoutCredentials(t *testing.T) {
	t.Parallel()
	noCreds := map[string]string{}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "OSS_ACCESS_KEY_ID", "OSS_ACCESS_KEY_SECRET"} {
		noCreds[k] = ""
	}
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 10, 1)
	for out, want := range map[string]string{"s3://bucket/prefix?endpoint=http://127.0.0.1:1&path_style=true": "AWS_ACCESS_KEY_ID",
		"oss://bucket/prefix?region=cn-hangzhou&endpoint=http://127.0.0.1:1": "OSS_ACCESS_KEY_ID"} {
		for _, args := range [][]string{
			{"migrate", "-m", "../../mappings/orders.yaml", "--source", "file:" + src, "--progress", "never"},
			{"replicate", "-m", "../../mappings/orders.yaml", "--source", "kafka://127.0.0.1:1/orders?group=g"},
			{"merge", dir},
		} {
			// configuration missing from the environment is invalid use: exit 2, like a flag
			code, _, stderr := runCLIWithEnv(t, noCreds, append(args, "--out", out)...)
			if code != exitUsage || !strings.Contains(stderr, "--out") || !strings.Contains(stderr, want) {
				t.Fatalf("%s --out %s: exit %d, want 2: %s", args[0], out, code, stderr)
			}
		}
	}
	if ents, _ := os.ReadDir("."); len(ents) > 0 {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ":") {
				t.Fatalf("a folder %q was created", e.Name())
			}
		}
	}
}

// A data file started while the rows are read (a region's buffer cut before the end) is
// finished after the read: its upload belongs to the file, not to the read that started it, so
// the read's end must not cancel it (it did: every large migrate into a bucket failed at its
// last commit with "context canceled").
func TestMigrateToObjectStoreFinishesFilesStartedDuringTheRead(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Parallel()
	srv := startVersitygw(t)
	const rows = 200000
	code, stdout, stderr := runCLIWithEnv(t, srv.Env, "migrate", "-m", "../../mappings/orders.yaml",
		"--source", fmt.Sprintf("gen:orders?rows=%d", rows), "--out", srv.URIFor("run"), "--regions", "4", "--progress", "never")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	m, err := outputtest.Manifest(filepath.Join(srv.Dir, s3test.Bucket, "run"))
	if err != nil {
		t.Fatal(err)
	}
	if m.RowsWritten != rows {
		t.Fatalf("the manifest lists %d rows written, want %d", m.RowsWritten, rows)
	}
}

// A secret written into a bucket URI, in any of the places it names one, is refused without
// being shown: every command's error quotes the URI masked and names the variable to set. An
// endpoint= with a password in its user info (endpoint=http://KEY:SECRET@host) was refused by
// the store with the password masked, after the command had quoted the whole URI before it.
func TestObjectStoreURISecretsNeverShown(t *testing.T) {
	t.Parallel()
	const secret = "S3CRET-xyz"
	env := map[string]string{"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "OSS_ACCESS_KEY_ID": "k", "OSS_ACCESS_KEY_SECRET": "s"}
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 10, 1)
	buckets := map[string]string{ // 127.0.0.1:1 refuses connections: nothing may get as far as dialling
		"s3://bucket/p?endpoint=http://AKIA:" + secret + "@127.0.0.1:1&path_style=true":      "AWS_SECRET_ACCESS_KEY",
		"s3://bucket/p?endpoint=http%3A%2F%2FAKIA%3A" + secret + "%40127.0.0.1%3A1":          "AWS_SECRET_ACCESS_KEY",
		"oss://bucket/p?region=cn-hangzhou&endpoint=https://AKIA:" + secret + "@127.0.0.1:1": "OSS_ACCESS_KEY_SECRET",
		// parameters the store refuses as credentials, masking them, after the command quoted them
		"s3://bucket/p?access_key=" + secret:                  "AWS_SECRET_ACCESS_KEY",
		"oss://bucket/p?region=cn-hangzhou&session=" + secret: "OSS_ACCESS_KEY_SECRET",
	}
	for uri, want := range buckets {
		for _, args := range [][]string{
			{"migrate", "-m", mapping, "--source", "file:" + src, "--progress", "never", "--out", uri},
			{"replicate", "-m", mapping, "--source", "kafka://127.0.0.1:1/orders?group=g", "--out", uri},
			{"merge", dir, "--out", uri},
			{"verify", "-m", mapping, "--source", "file:" + src, "--target", uri},
			{"migrate", "-m", mapping, "--source", strings.Replace(uri, "/p?", "/p/orders.csv?", 1), "--progress", "never", "--out", filepath.Join(dir, "out")},
			{"report", "-m", mapping, "--source", strings.Replace(uri, "/p?", "/p/orders.csv?", 1)},
			{"check", "-m", mapping, "--source", strings.Replace(uri, "/p?", "/p/orders.csv?", 1)},
		} {
			code, stdout, stderr := runCLIWithEnv(t, env, args...)
			if code == 0 || strings.Contains(stdout+stderr, secret) || !strings.Contains(stderr, want) {
				t.Errorf("rekey %s: exit %d, want a refusal naming %s without the secret:\n%s%s", strings.Join(args, " "), code, want, stdout, stderr)
			}
		}
	}

	// merge's inputs: the input was quoted as given before the store's refusal
	for _, in := range []string{
		"s3://AKIA:" + secret + "@bucket/p",
		"s3://bucket/p?password=" + secret,
		"s3://bucket/p?endpoint=http://AKIA:" + secret + "@127.0.0.1:1",
		"s3://bucket/p?access_key=" + secret,
	} {
		code, stdout, stderr := runCLIWithEnv(t, env, "merge", in, "--out", filepath.Join(dir, "merged"))
		if code == 0 || strings.Contains(stdout+stderr, secret) || !strings.Contains(stderr, "AWS_SECRET_ACCESS_KEY") {
			t.Errorf("rekey merge %s: exit %d, want a refusal naming AWS_SECRET_ACCESS_KEY without the secret:\n%s%s", in, code, stdout, stderr)
		}
	}

	// a bucket source whose file parameters are wrong too: the file: URI split from it was
	// quoted whole, password and all, before the store refused the password
	for _, uri := range []string{
		"s3://AKIA:" + secret + "@bucket/p/orders.csv?header=maybe",
		"oss://AKIA:" + secret + "@bucket/p/orders.csv?limit=x&region=cn-hangzhou",
		"s3://AKIA:" + secret + "@bucket/p/orders.csv?endpoint=%zz",
		"s3://AKIA:" + secret + "@bucket/p/*.csv?delimiter=ab",
	} {
		code, stdout, stderr := runCLIWithEnv(t, env, "migrate", "-m", mapping, "--source", uri, "--progress", "never", "--out", filepath.Join(dir, "out"))
		if code == 0 || strings.Contains(stdout+stderr, secret) {
			t.Errorf("rekey migrate --source %s: exit %d, want a refusal without the secret:\n%s%s", uri, code, stdout, stderr)
		}
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// An export in a bucket migrates as the same files on disk do (the same rows in the same regions),
// verify reads it as migrate did, and a resume after an object was rewritten is refused naming it.
func TestMigrateFromBucketEqualsLocalFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := s3test.StartVersitygw(t)
	src := ordersCSV(t, dir, "orders.csv", 5000, 3)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := s3store.Open(t.Context(), srv.URIFor("export"), s3test.Getenv(srv.Env))
	if err != nil {
		t.Fatal(err)
	}
	if err := bucket.Put(t.Context(), "orders.csv", data); err != nil {
		t.Fatal(err)
	}
	params := strings.SplitN(srv.URI, "?", 2)[1]
	bucketSrc := "s3://" + s3test.Bucket + "/export/*.csv?" + params
	job := []string{"migrate", "-m", "../../mappings/orders.yaml", "--regions", "4", "--progress", "never"}

	local, remote := filepath.Join(dir, "local"), filepath.Join(dir, "remote")
	if code, stdout, stderr := runCLIWithEnv(t, srv.Env, append(job, "--source", src, "--out", local)...); code != 0 {
		t.Fatalf("from the file: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLIWithEnv(t, srv.Env, append(job, "--source", bucketSrc, "--out", remote)...); code != 0 {
		t.Fatalf("from %s: exit %d\n%s%s", bucketSrc, code, stdout, stderr)
	}
	lm, err := lindorm.ReadManifest(local)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := lindorm.ReadManifest(remote)
	if err != nil {
		t.Fatal(err)
	}
	if rm.RowsIn != 5000 || rm.RowsWritten != lm.RowsWritten || len(rm.Regions) != len(lm.Regions) {
		t.Fatalf("from the bucket: %d rows in, %d written in %d regions; from the file %d written in %d", rm.RowsIn, rm.RowsWritten, len(rm.Regions), lm.RowsWritten, len(lm.Regions))
	}
	for i := range rm.Regions {
		if rm.Regions[i].Rows != lm.Regions[i].Rows {
			t.Errorf("region %d: %d rows from the bucket, %d from the file", i, rm.Regions[i].Rows, lm.Regions[i].Rows)
		}
	}
	if code, stdout, stderr := runCLIWithEnv(t, srv.Env, "verify", "-m", "../../mappings/orders.yaml", "--source", bucketSrc, "--target", local, "--progress", "never"); code != 0 || !strings.Contains(stdout, "EQUAL") {
		t.Fatalf("verify of the file's output against the bucket's export: exit %d\n%s%s", code, stdout, stderr)
	}

	// Without credentials the bucket is not read, and the error says which variables to set.
	if code, _, stderr := runCLIWithEnv(t, map[string]string{}, append(job, "--source", bucketSrc, "--out", filepath.Join(dir, "nocreds"))...); code != 2 || !strings.Contains(stderr, "AWS_ACCESS_KEY_ID") {
		t.Fatalf("without credentials: exit %d, want 2 naming AWS_ACCESS_KEY_ID\n%s", code, stderr)
	}

	// A rewritten object is another input: --resume refuses it.
	if err := bucket.Put(t.Context(), "orders.csv", append(data, data[len(data)-200:]...)); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLIWithEnv(t, srv.Env, append(job, "--source", bucketSrc, "--out", remote, "--resume")...)
	if code != 2 || !strings.Contains(stdout+stderr, "orders.csv") {
		t.Fatalf("resume after the object changed: exit %d, want 2 naming orders.csv\n%s%s", code, stdout, stderr)
	}
}

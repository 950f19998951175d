package main

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// One large file for more shards than files: each shard reads a byte range of it, for JSON Lines
// and for CSV read with multiline=false. The 3 shards' outputs merge into what the whole-file run
// writes (the same rows, the same rejects, verify EQUAL against the file), with the same region
// plan on every shard even where it is sampled from the data. A CSV file without multiline=false
// and a gzip file are refused, saying what to do, before anything is written.
func TestShardsSplitOneFileByBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orders := ordersCSV(t, dir, "orders.csv", 3000, 7)
	jsonl := ordersJSONL(t, orders, filepath.Join(dir, "orders.jsonl"))
	// one stray quote in the middle of the CSV: rejected once, by the shard whose range holds it
	lines := strings.SplitAfter(readText(t, orders), "\n")
	lines[1500] = `u1,"unclosed,taobao,1704067200000,PAID,Hangzhou,1.00` + "\n"
	writeFile(t, dir, "orders.csv", strings.Join(lines, ""))
	byOrderID := writeFile(t, dir, "by_orderid.yaml", strings.Replace(readText(t, "../../mappings/orders.yaml"),
		`primary_key: "[md5(userid).substr(0,4) + userid AS pk1][orderid]"`, `primary_key: "[orderid][userid AS pk1]"`, 1))

	for _, c := range []struct{ name, source, mapping string }{
		{"jsonl", "file:" + jsonl, "../../mappings/orders.yaml"},
		{"csv", "file:" + orders + "?multiline=false", "../../mappings/orders.yaml"},
		{"quantile plan", "file:" + orders + "?multiline=false", byOrderID},
	} {
		whole := filepath.Join(dir, c.name+"-whole")
		code, _, errs := runCLI(t, "migrate", "-m", c.mapping, "--source", c.source, "--regions", "4", "--out", whole, "--progress", "never")
		if code != 0 && code != 1 {
			t.Fatalf("%s: the whole-file run: exit %d: %s", c.name, code, errs)
		}
		var outs []string
		for i := range 3 {
			out := filepath.Join(dir, fmt.Sprintf("%s-shard-%d", c.name, i))
			code, _, errs := runCLI(t, "migrate", "-m", c.mapping, "--source", c.source, "--shard", fmt.Sprintf("%d/3", i), "--regions", "4", "--out", out, "--progress", "never")
			if code != 0 && code != 1 {
				t.Fatalf("%s: shard %d/3: exit %d: %s", c.name, i, code, errs)
			}
			outs = append(outs, out)
		}
		merged := filepath.Join(dir, c.name+"-merged")
		mustRun(t, append([]string{"merge"}, append(outs, "--out", merged)...)...)
		wantRows, wm := outputRows(t, whole)
		gotRows, gm := outputRows(t, merged)
		if !reflect.DeepEqual(gotRows, wantRows) || gm.RowsIn != wm.RowsIn || gm.RowsRejected != wm.RowsRejected || !reflect.DeepEqual(gm.Plan, wm.Plan) {
			t.Errorf("%s: 3 shards merged: %d rows written (%d in, %d rejected, plan %v); the whole file: %d (%d in, %d rejected, plan %v)", c.name,
				len(gotRows), gm.RowsIn, gm.RowsRejected, gm.Plan, len(wantRows), wm.RowsIn, wm.RowsRejected, wm.Plan)
		}
		if wantStrategy := map[bool]string{true: "quantile", false: "hex_prefix"}[c.mapping == byOrderID]; wm.RowsIn != 3000 ||
			(c.name != "jsonl" && wm.RowsRejected != 1) || wm.Plan.Strategy != wantStrategy || wm.Plan.Regions != 4 {
			t.Errorf("%s: the whole file: %d rows in, %d rejected, plan %s of %d regions (want %s)", c.name, wm.RowsIn, wm.RowsRejected, wm.Plan.Strategy, wm.Plan.Regions, wantStrategy)
		}
		if code, stdout, errs := runCLI(t, "verify", "-m", c.mapping, "--source", c.source, "--target", merged, "--progress", "never"); !strings.Contains(stdout, "EQUAL") {
			t.Errorf("%s: verify of the merged shards against the file: exit %d\n%s%s", c.name, code, stdout, errs)
		}
		// a shard's range given twice is the same shard twice; a whole run with the shards reads its bytes again
		if code, _, errs := runCLI(t, "merge", outs[0], outs[1], whole, "--out", filepath.Join(dir, c.name+"-overlap")); code != 2 {
			t.Errorf("%s: merge of shards with the whole run: exit %d: %s", c.name, code, errs)
		}
	}

	gz := filepath.Join(dir, "orders.jsonl.gz")
	if err := os.WriteFile(gz, gzipText(t, readText(t, jsonl)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ source, want string }{
		{"file:" + orders, "add multiline=false to the --source URI"},
		{"file:" + gz, "it is gzip, which cannot be read from the middle: decompress it (gunzip), or split the input into more files"},
	} {
		out := filepath.Join(dir, "refused")
		code, _, errs := runCLI(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", c.source, "--shard", "1/3", "--out", out, "--progress", "never")
		if code != 2 || !strings.Contains(errs, "1 file(s) for 3 shards") || !strings.Contains(errs, c.want) {
			t.Errorf("--source %s --shard 1/3: exit %d, want 2 saying %q: %s", c.source, code, c.want, errs)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("--source %s --shard 1/3: the refused run made %s (%v)", c.source, out, err)
		}
	}
}

// ordersJSONL writes the rows of an orders CSV file as JSON Lines.
func ordersJSONL(t *testing.T, csvPath, path string) string {
	t.Helper()
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range recs[1:] { // userid,orderid,channel,ts,status,location,amount
		fmt.Fprintf(&b, `{"userid":%q,"orderid":%s,"channel":%q,"ts":%s,"status":%q,"location":%q,"amount":%s}`+"\n", r[0], r[1], r[2], r[3], r[4], r[5], r[6])
	}
	return writeFile(t, filepath.Dir(path), filepath.Base(path), b.String())
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func gzipText(t *testing.T, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

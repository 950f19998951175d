// Command store benchmarks `rekey migrate --out s3://...` on a real S3 server (versitygw on
// loopback) against the same job written to a local folder.
//
//	go run ./bench/store -rekey bench/work/rekey -versitygw ~/go/bin/versitygw \
//	  -csv bench/work/orders-5000000.csv -rows 5000000 -json bench/work/store.json
//
// versitygw (`versitygw --access K --secret S --port 127.0.0.1:PORT posix DIR`) serves the bucket
// "bench" from a folder of -work, on the same disk as the local side's output. Then, alternated
// -runs times, each in its own process, with the core case's job (mappings/orders.yaml, 16
// regions of zstd Parquet, default --memory):
//
//   - local: `rekey migrate --out WORK/out-store-local`;
//   - store: `rekey migrate --out s3://bench/run-N?endpoint=http://127.0.0.1:PORT&path_style=true`,
//     the credentials in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY;
//   - read: the local side's job with its source, the same CSV, read from the bucket
//     (`--source s3://bench/in/orders.csv?...`, ranged reads).
//
// Each side's time runs from its process start to its exit (the last CompleteMultipartUpload and the
// manifest included), its peak RSS from wait4. versitygw runs on the same cores and does its own
// MD5 of every part and its own disk writes: its CPU time during each store run (/proc/PID/stat) and
// its peak RSS are reported beside the store side's figures.
//
// Readback: the last store run's objects are downloaded through the S3 API (s3store: List, then a
// ranged Open of every object) into WORK/store-readback, next to the last local run in
// WORK/out-store-local, for bench/run.sh to read both with DuckDB. The object names and sizes must
// match the local run's files and the manifest must count -rows rows, or this fails.
//
// The medians are printed as JSON: {"local": {...}, "store": {...}, "ratio": store/local, ...},
// with the 1-minute load average before and after (the cores are shared).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rekey/rekey/bench/benchproc"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

const bucket = s3test.Bucket // versitygw serves it from a folder of the bench's work folder

// Side is one side's figures; the store side's also say what versitygw spent meanwhile.
type Side struct {
	benchproc.Figures
	Bytes           int64   `json:"bytes"`                             // bytes of the output's data files
	Files           int     `json:"files"`                             // data files
	ServerCPU       float64 `json:"server_cpu_seconds,omitempty"`      // versitygw's user + system time during the run
	ServerPeakRSS   int64   `json:"server_peak_rss_bytes,omitempty"`   // versitygw's peak RSS so far
	ClientServerCPU float64 `json:"client_server_cpu_ratio,omitempty"` // versitygw CPU / rekey CPU
	Load            float64 `json:"loadavg"`                           // 1-minute load average when the run started
}

func main() {
	rekey := flag.String("rekey", "", "path of the rekey binary (built from ./cmd/rekey)")
	vgw := flag.String("versitygw", "", "path of the versitygw binary (v1.8.0)")
	csv := flag.String("csv", "", "the orders CSV (rekey gen orders)")
	rows := flag.Int64("rows", 0, "rows in the CSV")
	runs := flag.Int("runs", 3, "alternated runs of each side")
	mapping := flag.String("mapping", "mappings/orders.yaml", "mapping")
	work := flag.String("work", os.TempDir(), "work directory (versitygw's folder, the outputs)")
	out := flag.String("json", "", "also write the figures to this file")
	extra := flag.String("rekey-args", "", "extra arguments for both sides' rekey migrate, space-separated")
	storeExtra := flag.String("store-args", "", "extra arguments for the store side only, space-separated")
	flag.Parse()
	if *rekey == "" || *vgw == "" || *csv == "" || *rows <= 0 {
		fmt.Fprintln(os.Stderr, "bench/store: -rekey, -versitygw, -csv and -rows are required")
		os.Exit(2)
	}
	if err := run(*rekey, *vgw, *csv, *mapping, *work, *out, *rows, *runs, strings.Fields(*extra), strings.Fields(*storeExtra)); err != nil {
		fmt.Fprintln(os.Stderr, "bench/store:", err)
		os.Exit(1)
	}
}

func run(rekey, vgwBin, csv, mapping, work, out string, rows int64, runs int, extra, storeExtra []string) error {
	work, _ = filepath.Abs(work)
	root := filepath.Join(work, "store-vgw")
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	srv, err := s3test.LaunchVersitygw(vgwBin, root)
	if err != nil {
		return err
	}
	defer srv.Stop()
	env := os.Environ()
	for k, v := range srv.Env {
		env = append(env, k+"="+v)
	}
	localOut := filepath.Join(work, "out-store-local")
	// the CSV in the bucket too, for the side that reads its source from there
	inURI, err := upload(srv, csv, "in/orders.csv")
	if err != nil {
		return fmt.Errorf("upload the CSV: %w", err)
	}
	migrate := func(name, source, outArg string, more []string) (Side, error) {
		stats := filepath.Join(work, "store-stats-"+name+".json")
		args := benchproc.WithArgs(benchproc.WithArgs([]string{"migrate", "-m", mapping, "--source", source, "--out", outArg, "--regions", "16",
			"--progress", "never", "--stats-json", stats}, extra), more)
		cmd := exec.Command(rekey, args...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		load := benchproc.LoadAvg()
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return Side{}, fmt.Errorf("rekey %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
		}
		s := Side{Figures: benchproc.Measure(rows, time.Since(start), cmd.ProcessState), Load: load}
		var st struct {
			RowsIn      int64 `json:"rows_in"`
			RowsWritten int64 `json:"rows_written"`
			Files       int   `json:"files"`
			Bytes       int64 `json:"bytes"`
		}
		data, err := os.ReadFile(stats)
		if err == nil {
			err = json.Unmarshal(data, &st)
		}
		if err != nil {
			return Side{}, fmt.Errorf("rekey %s: its --stats-json: %w", name, err)
		}
		if st.RowsIn != rows || st.RowsWritten != rows {
			return Side{}, fmt.Errorf("rekey %s: %d rows in, %d written, want %d", name, st.RowsIn, st.RowsWritten, rows)
		}
		s.Files, s.Bytes = st.Files, st.Bytes
		return s, nil
	}
	load0 := benchproc.LoadAvg()
	var locals, stores, reads []Side
	for i := 1; i <= runs; i++ {
		os.RemoveAll(localOut)
		fmt.Fprintf(os.Stderr, "store: rekey migrate to a local folder (run %d) ...\n", i)
		l, err := migrate("local", "file:"+csv, localOut, nil)
		if err != nil {
			return err
		}
		locals = append(locals, l)

		readOut := filepath.Join(work, "out-store-read")
		os.RemoveAll(readOut)
		fmt.Fprintf(os.Stderr, "store: rekey migrate from the CSV in versitygw to a local folder (run %d) ...\n", i)
		r, err := migrate("read", inURI, readOut, nil)
		if err != nil {
			return err
		}
		os.RemoveAll(readOut)
		reads = append(reads, r)

		// the previous store run's objects go: one run's worth of disk at a time
		os.RemoveAll(filepath.Join(root, bucket, fmt.Sprintf("run-%d", i-1)))
		fmt.Fprintf(os.Stderr, "store: rekey migrate to versitygw (run %d) ...\n", i)
		cpu0, err := benchproc.ProcCPU(srv.PID)
		if err != nil {
			return err
		}
		uri := srv.URIFor(fmt.Sprintf("run-%d", i))
		s, err := migrate("s3", "file:"+csv, uri, storeExtra)
		if err != nil {
			return err
		}
		cpu1, err := benchproc.ProcCPU(srv.PID)
		if err != nil {
			return err
		}
		s.ServerCPU = cpu1 - cpu0
		s.ServerPeakRSS = benchproc.ProcMemory(srv.PID, "VmHWM")
		if s.CPUSeconds > 0 {
			s.ClientServerCPU = s.ServerCPU / s.CPUSeconds
		}
		stores = append(stores, s)
		fmt.Fprintf(os.Stderr, "store: run %d: local %.0f rows/s, store %.0f rows/s (versitygw %.1f s CPU)\n", i, l.RowsPerSec, s.RowsPerSec, s.ServerCPU)
	}
	readback := filepath.Join(work, "store-readback")
	if err := download(srv, fmt.Sprintf("run-%d", runs), readback, localOut, rows); err != nil {
		return fmt.Errorf("readback: %w", err)
	}
	l, s, rd := benchproc.Median(locals), benchproc.Median(stores), benchproc.Median(reads)
	res := map[string]any{"rows": rows, "local": l, "store": s, "ratio": s.RowsPerSec / l.RowsPerSec,
		"read": rd, "read_ratio": rd.RowsPerSec / l.RowsPerSec,
		"local_dir": localOut, "store_dir": readback, "loadavg_start": load0, "loadavg_end": benchproc.LoadAvg()}
	if err := benchproc.WriteJSON(out, res, map[string]any{"local": l, "store": s, "read": rd}); err != nil {
		return err
	}
	return nil
}

// upload puts the file into the bucket as name through the S3 API (a multipart upload) and returns
// the --source URI that reads it.
func upload(srv *s3test.Server, file, name string) (string, error) {
	ctx := context.Background()
	st, err := s3store.Open(ctx, srv.URIFor(""), s3test.Getenv(srv.Env))
	if err != nil {
		return "", err
	}
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	w, err := st.Create(ctx, name)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(w, f); err != nil {
		w.Abort()
		return "", err
	}
	if _, err := w.Commit(ctx); err != nil {
		return "", err
	}
	return srv.URIFor(name), nil
}

// download copies every object of the prefix through the S3 API into dir, and checks the data
// objects are the local run's files (the same names, as many) and the manifest counts rows.
func download(srv *s3test.Server, prefix, dir, localOut string, rows int64) error {
	ctx := context.Background()
	st, err := s3store.Open(ctx, srv.URIFor(prefix), s3test.Getenv(srv.Env))
	if err != nil {
		return err
	}
	os.RemoveAll(dir)
	objs, err := st.List(ctx, "")
	if err != nil {
		return err
	}
	var data []string
	for _, o := range objs {
		if strings.HasPrefix(o.Name, "data/") {
			data = append(data, o.Name)
			if _, err := os.Stat(filepath.Join(localOut, filepath.FromSlash(o.Name))); err != nil {
				return fmt.Errorf("object %s: the local run has no such file: %w", o.Name, err)
			}
		}
		r, err := st.Open(ctx, o.Name)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(o.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.Close()
			return err
		}
		f, err := os.Create(p)
		if err != nil {
			r.Close()
			return err
		}
		n, err := io.Copy(f, io.NewSectionReader(r, 0, r.Size()))
		r.Close()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", o.Name, err)
		}
		if n != o.Size {
			return fmt.Errorf("get %s: %d bytes, listed as %d", o.Name, n, o.Size)
		}
	}
	local, err := filepath.Glob(filepath.Join(localOut, "data", "*", "*"))
	if err != nil {
		return err
	}
	if len(local) != len(data) || len(data) == 0 {
		return fmt.Errorf("%d data objects, the local run wrote %d files", len(data), len(local))
	}
	var m struct {
		RowsIn      int64 `json:"rows_in"`
		RowsWritten int64 `json:"rows_written"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		return fmt.Errorf("manifest.json: %w", err)
	}
	if m.RowsIn != rows || m.RowsWritten != rows {
		return fmt.Errorf("manifest.json: %d rows in, %d written, want %d", m.RowsIn, m.RowsWritten, rows)
	}
	fmt.Fprintf(os.Stderr, "store: downloaded %d objects (%d data) of %s through the S3 API into %s\n", len(objs), len(data), prefix, dir)
	return nil
}

// Command stages says where rekey migrate's CPU goes, stage by stage, next to each stage's floor:
// what the fastest code for that stage alone costs on the same bytes.
//
//	go run ./bench/stages -rekey bench/work/rekey -csv bench/work/orders-5000000.csv -mapping mappings/orders.yaml
//
// It runs the rekey binary on the CSV with a CPU profile (REKEY_CPUPROFILE) and files every
// sample under the stage of its innermost frame that belongs to one (runtime frames such as
// memmove or mallocgc count for the stage that called them; the collector's own goroutines are a
// stage of their own). Then, in this process and on one core, it times each floor on the same
// input: the CSV's bytes read and their line and field separators found (bytes.Count), each field
// checked and parsed by the standard library (utf8.ValidString, strconv), md5 of the hashed key
// column, the target values appended to one buffer per column, and zstd (the sink's settings) of
// the Parquet pages rekey wrote, decompressed. It prints a Markdown table in CPU nanoseconds per
// row and writes it as JSON with -json.
package main

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/zstd"
	"go.yaml.in/yaml/v3"
)

// stage is one step of a row's way, and the frames whose CPU it owns: a sample belongs to the
// first stage (innermost frame outwards) one of whose prefixes starts the frame's function name.
type stage struct {
	name     string
	prefixes []string
	floor    string // what the floor measures
}

var stages = []stage{
	{"GC (background)", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}, ""},
	{"compress (zstd)", []string{"github.com/klauspost/compress/"}, "zstd (the sink's level and window) of the Parquet pages rekey wrote, decompressed"},
	{"transform (key and column functions)", []string{"crypto/md5.", "encoding/hex.", "github.com/rekey/rekey/transform."}, "md5 of the hashed column's value"},
	{"encode columns (Parquet)", []string{"github.com/rekey/rekey/sink/parquet.", "github.com/apache/arrow/", "github.com/rekey/rekey/sink/files.DecimalValue", "github.com/rekey/rekey/sink/files.parseDecimal"}, "the target values appended to one buffer per column"},
	{"route, roll and write files", []string{"github.com/rekey/rekey/sink/", "github.com/rekey/rekey/store", "github.com/rekey/rekey/pipeline.RegionPlan", "os.(*File).Write", "syscall.Write", "syscall.Fsync"}, ""},
	{"parse values", []string{"github.com/rekey/rekey/source/file.(*Source).parse", "github.com/rekey/rekey/source/file.(*Source).setCell", "github.com/rekey/rekey/source/cqlvalue."}, "each field checked (utf8.ValidString) or parsed (strconv) by its column's type"},
	{"read and split", []string{"github.com/rekey/rekey/source/", "os.(*File).Read", "syscall.Read"}, "the file read and its line and field separators counted (bytes.Count)"},
	{"engine (batches, workers)", []string{"github.com/rekey/rekey/pipeline."}, ""},
}

const other = "other (start-up, runtime)"

type result struct {
	Stage      string  `json:"stage"`
	NsPerRow   float64 `json:"ns_per_row"`
	Share      float64 `json:"share"`
	FloorNs    float64 `json:"floor_ns_per_row,omitempty"`
	FloorRatio float64 `json:"ratio_to_floor,omitempty"`
	Floor      string  `json:"floor,omitempty"`
}

func main() {
	rekey := flag.String("rekey", "", "path of the rekey binary")
	csvPath := flag.String("csv", "", "the orders CSV (rekey gen orders)")
	mapping := flag.String("mapping", "mappings/orders.yaml", "the mapping")
	work := flag.String("work", os.TempDir(), "work directory")
	out := flag.String("json", "", "also write the table to this file")
	flag.Parse()
	if *rekey == "" || *csvPath == "" {
		fmt.Fprintln(os.Stderr, "usage: stages -rekey BIN -csv FILE [-mapping FILE] [-work DIR] [-json FILE]")
		os.Exit(2)
	}
	if err := run(*rekey, *csvPath, *mapping, *work, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench/stages:", err)
		os.Exit(1)
	}
}

func run(rekey, csvPath, mapping, work, out string) error {
	dir := filepath.Join(work, "stages-out")
	prof := filepath.Join(work, "stages.prof")
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	cmd := exec.Command(rekey, "migrate", "-m", mapping, "--source", "file:"+csvPath, "--out", dir, "--regions", "16", "--progress", "never")
	cmd.Env = append(os.Environ(), "REKEY_CPUPROFILE="+prof)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("rekey migrate: %w", err)
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	byStage, total, err := classify(prof)
	if err != nil {
		return err
	}
	rows, floors, err := measureFloors(csvPath, mapping, dir)
	if err != nil {
		return err
	}
	// The profile's samples give the shares; the process's CPU time gives the scale (a profile
	// misses what runs before it starts and after it stops).
	var res []result
	for _, st := range append(stages, stage{name: other}) {
		share := float64(byStage[st.name]) / float64(total)
		r := result{Stage: st.name, Share: share, NsPerRow: share * float64(cpu.Nanoseconds()) / float64(rows), Floor: st.floor}
		if f, ok := floors[st.name]; ok {
			r.FloorNs = f
			r.FloorRatio = r.NsPerRow / f
		}
		res = append(res, r)
	}
	fmt.Printf("rekey migrate -m %s, %d rows: %.2f CPU-s, %.0f ns per row (%s, GOMAXPROCS %d)\n\n", mapping, rows, cpu.Seconds(),
		float64(cpu.Nanoseconds())/float64(rows), runtime.Version(), runtime.GOMAXPROCS(0))
	fmt.Println("| stage | CPU ns/row | share | floor ns/row | x floor | the floor |")
	fmt.Println("|---|---:|---:|---:|---:|---|")
	for _, r := range res {
		floor, ratio := "", ""
		if r.FloorNs > 0 {
			floor, ratio = fmt.Sprintf("%.0f", r.FloorNs), fmt.Sprintf("%.1f", r.FloorRatio)
		}
		fmt.Printf("| %s | %.0f | %.0f%% | %s | %s | %s |\n", r.Stage, r.NsPerRow, 100*r.Share, floor, ratio, r.Floor)
	}
	if out != "" {
		data, _ := json.MarshalIndent(map[string]any{"mapping": mapping, "rows": rows, "cpu_seconds": cpu.Seconds(), "stages": res}, "", "  ")
		return os.WriteFile(out, append(data, '\n'), 0o644)
	}
	return nil
}

// classify sums the profile's CPU samples by stage.
func classify(path string) (map[string]int64, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	vi := len(p.SampleType) - 1 // cpu nanoseconds
	by := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[vi]
		total += v
		by[stageOf(s)] += v
	}
	if total == 0 {
		return nil, 0, fmt.Errorf("%s holds no samples", path)
	}
	return by, total, nil
}

func stageOf(s *profile.Sample) string {
	var names []string // innermost first
	for _, loc := range s.Location {
		for i := len(loc.Line) - 1; i >= 0; i-- { // inlined frames come first
			if fn := loc.Line[i].Function; fn != nil {
				names = append(names, fn.Name)
			}
		}
	}
	// the collector's goroutines first: their frames are runtime's all the way
	for _, n := range names {
		for _, p := range stages[0].prefixes {
			if strings.HasPrefix(n, p) {
				return stages[0].name
			}
		}
	}
	for _, n := range names {
		for _, st := range stages[1:] {
			for _, p := range st.prefixes {
				if strings.HasPrefix(n, p) {
					return st.name
				}
			}
		}
	}
	return other
}

// the mapping's source columns and hashed column, as far as the floors need them
type mappingFile struct {
	Source struct {
		Columns yaml.Node `yaml:"columns"`
	} `yaml:"source"`
}

// measureFloors times each stage's floor on the CSV (and the Parquet files in outDir), in CPU
// nanoseconds per row, on this goroutine.
func measureFloors(csvPath, mapping, outDir string) (rows int64, floors map[string]float64, err error) {
	raw, err := os.ReadFile(mapping)
	if err != nil {
		return 0, nil, err
	}
	var m mappingFile
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return 0, nil, fmt.Errorf("%s: %w", mapping, err)
	}
	var types []string // by CSV column, in the mapping's order (gen writes them so)
	for i := 0; i+1 < len(m.Source.Columns.Content); i += 2 {
		types = append(types, m.Source.Columns.Content[i+1].Value)
	}
	floors = map[string]float64{}
	runtime.GC()

	// read and split
	start := cpuNow()
	f, err := os.Open(csvPath)
	if err != nil {
		return 0, nil, err
	}
	buf := make([]byte, 1<<20)
	var lines, commas int64
	for {
		n, err := f.Read(buf)
		lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		commas += int64(bytes.Count(buf[:n], []byte{','}))
		if err == io.EOF {
			break
		}
		if err != nil {
			f.Close()
			return 0, nil, err
		}
	}
	f.Close()
	rows = lines - 1 // the header
	readNs := cpuNow() - start
	floors["read and split"] = float64(readNs) / float64(rows)
	if commas < rows {
		return 0, nil, fmt.Errorf("%s: %d separators in %d rows: not the orders CSV", csvPath, commas, rows)
	}

	// parse values and the key's md5, over the records in memory (their reading is not counted)
	f, err = os.Open(csvPath)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<20))
	r.ReuseRecord = true
	if _, err := r.Read(); err != nil { // header
		return 0, nil, err
	}
	const block = 200000 // records parsed at a time, copied out of the reader
	var parseNs, md5Ns, appendNs int64
	var sink int64
	cols := make([][]byte, len(types))
	for {
		var recs [][]string
		for len(recs) < block {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return 0, nil, err
			}
			recs = append(recs, append([]string(nil), rec...))
		}
		if len(recs) == 0 {
			break
		}
		t := cpuNow()
		for _, rec := range recs {
			for i, v := range rec {
				switch types[i] {
				case "bigint", "int", "timestamp":
					n, _ := strconv.ParseInt(v, 10, 64)
					sink += n
				case "decimal", "double", "float":
					x, _ := strconv.ParseFloat(v, 64)
					sink += int64(x)
				default:
					if utf8.ValidString(v) {
						sink++
					}
				}
			}
		}
		parseNs += cpuNow() - t
		t = cpuNow()
		for _, rec := range recs {
			h := md5.Sum([]byte(rec[0]))
			sink += int64(h[0])
		}
		md5Ns += cpuNow() - t
		t = cpuNow()
		for _, rec := range recs {
			for i, v := range rec {
				cols[i] = append(cols[i], v...)
			}
		}
		for i := range cols {
			cols[i] = cols[i][:0]
		}
		appendNs += cpuNow() - t
	}
	floors["parse values"] = float64(parseNs) / float64(rows)
	floors["transform (key and column functions)"] = float64(md5Ns) / float64(rows)
	floors["encode columns (Parquet)"] = float64(appendNs) / float64(rows)

	// zstd of the pages rekey wrote
	pages, err := decompressedPages(outDir)
	if err != nil {
		return 0, nil, err
	}
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithZeroFrames(true),
		zstd.WithEncoderCRC(false), zstd.WithWindowSize(4<<20), zstd.WithEncoderConcurrency(1))
	var dst []byte
	t := cpuNow()
	for _, p := range pages {
		dst = enc.EncodeAll(p, dst[:0])
		sink += int64(len(dst))
	}
	floors["compress (zstd)"] = float64(cpuNow()-t) / float64(rows)
	if sink == 42 {
		fmt.Println() // keeps the work from being optimised away
	}
	return rows, floors, nil
}

// decompressedPages returns every page of every Parquet file under dir, decompressed.
func decompressedPages(dir string) ([][]byte, error) {
	var pages [][]byte
	err := filepath.WalkDir(filepath.Join(dir, "data"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") {
			return err
		}
		rd, err := file.OpenParquetFile(path, false)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer rd.Close()
		for g := 0; g < rd.NumRowGroups(); g++ {
			rg := rd.RowGroup(g)
			for c := 0; c < rg.NumColumns(); c++ {
				pr, err := rg.GetColumnPageReader(c)
				if err != nil {
					return err
				}
				for pr.Next() {
					pages = append(pages, append([]byte(nil), pr.Page().Data()...))
				}
				if err := pr.Err(); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
			}
		}
		return nil
	})
	if len(pages) == 0 && err == nil {
		err = fmt.Errorf("no Parquet pages under %s/data", dir)
	}
	return pages, err
}

// cpuNow is this process's CPU time (user and system) in nanoseconds.
func cpuNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

package file

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// pythonCases writes CSV files of random dialects (delimiter, quote, line ends, quoting, a last
// line with or without its line end) and JSON Lines files (escapes, surrogate pairs, numbers past
// 2^53, members missing or null) with Python's csv and json modules, and reads each back with
// them: cases.json holds, per file, its dialect and the rows Python reads.
const pythonCases = `
import csv, json, random, sys
random.seed(int(sys.argv[2]))
out = sys.argv[1]
cases = []
alpha = ['a', 'b', ',', ';', '|', "'", '"', '\n', '\r\n', ' ', '\t', 'é', '漢', '😀', '\\', '', '1', 'x"y']
def text(k):
    return ''.join(random.choice(alpha) for _ in range(random.randint(0, k)))
for i in range(40):
    d = random.choice([',', ';', '|', '\t'])
    q = random.choice(['"', "'"])
    term = random.choice(['\n', '\r\n'])
    n = random.randint(1, 5)
    path = '%s/c%d.csv' % (out, i)
    with open(path, 'w', newline='', encoding='utf-8') as f:
        w = csv.writer(f, delimiter=d, quotechar=q, lineterminator=term, quoting=random.choice([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
        w.writerow(['c%d' % j for j in range(n)])
        for r in range(random.randint(0, 30)):
            w.writerow([text(6) for _ in range(n)])
    if random.random() < 0.3:
        data = open(path, encoding='utf-8', newline='').read()
        if data.endswith(term):
            open(path, 'w', encoding='utf-8', newline='').write(data[:-len(term)])
    with open(path, newline='', encoding='utf-8') as f:
        rows = [r for r in csv.reader(f, delimiter=d, quotechar=q)][1:]
    cases.append({'path': path, 'delimiter': d, 'quote': q, 'columns': n, 'rows': [r for r in rows if r != []]})
strs = ['', 'plain', 'é漢😀', '"', '\\', '/', '\n\r\t\b\f', '\x00\x1f', '\u2028', '\ud7ff\ue000\uffff']
for i in range(10):
    path = '%s/j%d.jsonl' % (out, i)
    lines, rows = [], []
    for r in range(random.randint(1, 40)):
        o = {'t': random.choice(strs + [None, text(5)]),
             'n': random.choice([None, 0, -1, 2**53 + 1, -2**63, 2**63 - 1, random.randint(-2**62, 2**62)]),
             'd': random.choice([None, 0.1, -0.0, 1e300, 5e-324, 123456789.123456789, random.uniform(-1e9, 1e9)]),
             'b': random.choice([None, True, False])}
        for k in random.sample(list(o), random.randint(0, 2)):
            del o[k]
        keys = list(o)
        random.shuffle(keys)
        line = json.dumps({k: o[k] for k in keys}, ensure_ascii=random.random() < 0.5)
        lines.append(line)
        v = json.loads(line)
        rows.append({k: (repr(x) if isinstance(x, float) else x) for k, x in v.items()})
    open(path, 'w', encoding='utf-8', newline='').write('\n'.join(lines) + '\n')
    cases.append({'path': path, 'json': rows})
json.dump(cases, open(out + '/cases.json', 'w'))
`

// TestCSVAndJSONLinesReadAsPython: files that Python's csv and json modules write are read as
// those modules read them back, at any chunking: every CSV dialect's quoting (doubled quotes,
// quoted delimiters and line breaks, CRLF), a last line without its line end; JSON escapes,
// surrogate pairs, integers past 2^53, shortest floats, null and missing members. An independent
// reader: skipped where python3 is not on PATH.
func TestCSVAndJSONLinesReadAsPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the differential test needs Python's csv and json modules")
	}
	for _, seed := range []int{1, 2} {
		dir := t.TempDir()
		if out, err := exec.Command(py, "-c", pythonCases, dir, strconv.Itoa(seed)).CombinedOutput(); err != nil {
			t.Fatalf("python3: %v\n%s", err, out)
		}
		data, err := os.ReadFile(filepath.Join(dir, "cases.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cases []struct {
			Path, Delimiter, Quote string
			Columns                int
			Rows                   [][]string
			JSON                   []map[string]any
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber() // integers past 2^53 kept exact
		if err := dec.Decode(&cases); err != nil {
			t.Fatal(err)
		}
		for i, c := range cases {
			chunk := 1 + (i*7)%50
			if c.JSON != nil {
				checkJSONAsPython(t, c.Path, c.JSON, chunk)
				continue
			}
			var schema pipeline.SourceSchema
			for j := 0; j < c.Columns; j++ {
				schema = append(schema, pipeline.SourceColumn{Name: fmt.Sprintf("c%d", j), Type: "text"})
			}
			src := mustNew(t, Config{Path: c.Path, Schema: schema, ChunkSize: chunk, Workers: 2, BatchSize: 3,
				CSV: CSVOptions{Delimiter: c.Delimiter[0], Quote: c.Quote[0]}})
			got := [][]string{}
			for _, b := range runAll(t, src, nil) {
				for _, r := range b.Records {
					if r.Err != nil {
						t.Fatalf("%s (chunk %d): line %d rejected: %v (%q)", c.Path, chunk, r.Seq, r.Err, r.Raw)
					}
					rec := make([]string, len(r.Values))
					for j, v := range r.Values {
						rec[j] = v.Str // null, an unquoted empty field, is "" to Python
					}
					got = append(got, rec)
				}
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", c.Rows) {
				content, _ := os.ReadFile(c.Path)
				t.Fatalf("%s (chunk %d) %q\n rekey: %q\nPython: %q", c.Path, chunk, content, got, c.Rows)
			}
		}
	}
}

// checkJSONAsPython reads a JSON Lines file of t (text), n (bigint), d (double), b (boolean)
// members and compares each row with the one Python read (floats as their repr).
func checkJSONAsPython(t *testing.T, path string, want []map[string]any, chunk int) {
	t.Helper()
	schema := pipeline.SourceSchema{{Name: "t", Type: "text"}, {Name: "n", Type: "bigint"}, {Name: "d", Type: "double"}, {Name: "b", Type: "boolean"}}
	src := mustNew(t, Config{Path: path, Schema: schema, ChunkSize: chunk, Workers: 2, BatchSize: 3})
	i := 0
	for _, b := range runAll(t, src, nil) {
		for _, r := range b.Records {
			if i >= len(want) {
				t.Fatalf("%s: more rows than Python's %d", path, len(want))
			}
			if r.Err != nil {
				t.Fatalf("%s line %d rejected: %v (%q)", path, r.Seq, r.Err, r.Raw)
			}
			w := want[i]
			for ci, name := range []string{"t", "n", "d", "b"} {
				v := r.Values[ci]
				wv, ok := w[name]
				if !ok || wv == nil {
					if !v.IsNull() {
						t.Errorf("%s line %d %s: %v, want null (Python: %v)", path, r.Seq, name, v, wv)
					}
					continue
				}
				var same bool
				switch name {
				case "t":
					same = v.Kind == pipeline.KindText && v.Str == wv
				case "n":
					same = v.Kind == pipeline.KindInt && strconv.FormatInt(v.Num, 10) == string(wv.(json.Number))
				case "d":
					f, _ := strconv.ParseFloat(wv.(string), 64)
					same = v.Kind == pipeline.KindFloat && v.Float() == f && math.Signbit(v.Float()) == math.Signbit(f)
				case "b":
					same = v.Kind == pipeline.KindBool && v.BoolValue() == wv
				}
				if !same {
					t.Errorf("%s line %d %s: %v, want %v", path, r.Seq, name, v, wv)
				}
			}
			i++
		}
	}
	if i != len(want) {
		t.Errorf("%s: %d rows, Python read %d", path, i, len(want))
	}
}

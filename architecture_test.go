package rekey_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/rekey/rekey"

// testServers are the packages only tests and the playground use: the rekey binary must not link them.
var testServers = []string{
	"source/cassandra/cqltest", "source/cassandra/cassandratest", "source/kafka/kafkademo", "source/kafka/cdcdemo", "source/kafka/kafkatest",
	"store/storetest", "store/s3store/s3test", "sink/sqlsink/mysqltest", "sink/sinktest", "internal/wait", "internal/realpeers", "internal/spill/spilltest", "source/sourcetest",
}

// testModules are libraries that no shipped binary links: the S3 test server and a second
// Parquet reader, used by tests only.
var testModules = []string{"github.com/johannesboyne/gofakes3", "github.com/parquet-go/parquet-go"}

// testOnlyArrow is arrow's pqarrow and what it links (arrow's compute kernels, Flight and gRPC):
// tests read Parquet files back with it; the binary writes and reads them through arrow's
// parquet/file and parquet/schema, and linking pqarrow made it a third larger and its first build
// minutes longer.
var testOnlyArrow = []string{
	"github.com/apache/arrow/go/v15/parquet/pqarrow", "github.com/apache/arrow/go/v15/arrow/compute",
	"github.com/apache/arrow/go/v15/arrow/flight", "google.golang.org/grpc",
}

// playgroundModules are the servers the playground ships (go-mysql-server serves cutover's
// MySQL-protocol table, kfake its Kafka): they are in go.mod for it, and the rekey binary links
// none of them.
var playgroundModules = []string{"github.com/dolthub/go-mysql-server", "github.com/twmb/franz-go"}

// importRule is one row of ARCHITECTURE.md's package table.
type importRule struct {
	folders []string // module-relative package paths the row governs
	allowed []string // rekey packages they may import; nil with any
	any     bool
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readRules parses the package table of ARCHITECTURE.md: the first column names the folders, the
// last the rekey packages they may import (in backticks), "any", or "-" for none.
func readRules(t *testing.T) []importRule {
	t.Helper()
	f, err := os.Open("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rules []importRule
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		r := importRule{}
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			r.folders = append(r.folders, strings.TrimSuffix(m[1], "/"))
		}
		last := cells[len(cells)-1]
		r.any = strings.HasPrefix(last, "any")
		for _, m := range backticked.FindAllStringSubmatch(last, -1) {
			r.allowed = append(r.allowed, m[1])
		}
		rules = append(rules, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rules) < 10 {
		t.Fatalf("ARCHITECTURE.md: found %d rows in the package table, want the whole table", len(rules))
	}
	return rules
}

// ruleFor is the row governing pkg: the one naming the longest folder that holds it.
func ruleFor(rules []importRule, pkg string) (importRule, bool) {
	i := ruleIndex(rules, pkg)
	if i < 0 {
		return importRule{}, false
	}
	return rules[i], true
}

// ruleIndex is the index of ruleFor's row, -1 when none governs pkg.
func ruleIndex(rules []importRule, pkg string) int {
	best, bestLen := -1, -1
	for i, r := range rules {
		for _, f := range r.folders {
			if (pkg == f || strings.HasPrefix(pkg, f+"/")) && len(f) > bestLen {
				best, bestLen = i, len(f)
			}
		}
	}
	return best
}

type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

func goList(t *testing.T, args ...string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		// go test caches a result by the files the test itself opened; go list reads the sources
		// in another process, so stat them here, or an import added later would pass from cache.
		for _, f := range p.GoFiles {
			if _, err := os.Stat(filepath.Join(p.Dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// Every package imports only what ARCHITECTURE.md's table allows it (its non-test files), and every
// package is in the table: the layering the document describes is the one the code has.
func TestPackagesImportOnlyWhatArchitectureAllows(t *testing.T) {
	rules := readRules(t)
	for _, p := range goList(t, "./...") {
		pkg := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if pkg == "" {
			continue // this test's own package
		}
		r, ok := ruleFor(rules, pkg)
		if !ok {
			t.Errorf("%s is not in ARCHITECTURE.md's package table: add a row saying what lives there and what it may import", pkg)
			continue
		}
		for _, imp := range p.Imports {
			dep, own := strings.CutPrefix(imp, module+"/")
			if !own {
				continue
			}
			if strings.HasPrefix(pkg, "cmd/rekey") && slices.Contains(testServers, dep) {
				t.Errorf("%s imports %s, a test server: the rekey binary must not ship it", pkg, dep)
			}
			if !r.any && !slices.Contains(r.allowed, dep) {
				t.Errorf("%s imports %s, which ARCHITECTURE.md does not allow it (allowed: %v): move the code, or change the table if the design changed", pkg, dep, r.allowed)
			}
		}
	}
}

// Every rekey package a row of ARCHITECTURE.md allows is imported by a package of that row: the
// table says what the code needs, not what it once did, so a dependency dropped from the code
// leaves the table too and the floors it draws stay the real ones.
func TestArchitectureAllowsOnlyWhatIsImported(t *testing.T) {
	rules := readRules(t)
	used := make([]map[string]bool, len(rules))
	for _, p := range goList(t, "./...") {
		pkg := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		i := ruleIndex(rules, pkg)
		if pkg == "" || i < 0 {
			continue
		}
		if used[i] == nil {
			used[i] = map[string]bool{}
		}
		for _, imp := range p.Imports {
			if dep, own := strings.CutPrefix(imp, module+"/"); own {
				used[i][dep] = true
			}
		}
	}
	for i, r := range rules {
		for _, dep := range r.allowed {
			if !r.any && !used[i][dep] {
				t.Errorf("ARCHITECTURE.md allows %v to import %s, which none of them imports: drop it from the row", r.folders, dep)
			}
		}
	}
}

// pipeline is the vocabulary every package speaks and the engine every command runs: it imports
// the standard library only (no rekey package, no driver, no logger), so that it stays the floor.
func TestPipelineImportsOnlyTheStandardLibrary(t *testing.T) {
	for _, p := range goList(t, "./pipeline") {
		for _, imp := range p.Imports {
			if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
				t.Errorf("pipeline imports %s: the vocabulary and the engine import the standard library only; move what needs it up to its user", imp)
			}
		}
	}
}

// The rekey binary links none of the libraries that only tests and the playground use, and the
// playground none that only tests use.
func TestBinaryLinksNoTestOnlyLibrary(t *testing.T) {
	for bin, refused := range map[string][]string{
		"cmd/rekey":      append(append(append([]string{}, testModules...), playgroundModules...), testOnlyArrow...),
		"cmd/playground": testModules,
	} {
		for _, p := range goList(t, "-deps", "./"+bin) {
			for _, m := range refused {
				if p.ImportPath == m || strings.HasPrefix(p.ImportPath, m+"/") {
					t.Errorf("%s links %s (a library it must not ship)", bin, p.ImportPath)
				}
			}
		}
	}
}

// storeKind matches what tells a local folder from an object store, or one object store from
// another: the store.Dir interface, the URI test, opening a folder by hand, asserting on a
// store's optional interfaces, and testing a URI or its scheme for s3 or oss.
var storeKind = regexp.MustCompile(`store\.(Dir|IsLocal|NewLocal)\b|\.\(store\.(Renamer|Copier|ConditionalPutter)\)` +
	`|(HasPrefix|TrimPrefix|CutPrefix|EqualFold)\([^)]*"(s3|oss)[:"]|[!=]= "(s3|oss)"`) // the test cuts a line at "//": "s3: is what is left of "s3://"

// No package but store and output (and the test servers and bench/, which set up what they
// test) branches on the kind of store: the others ask store and output for an ability (a local
// path, a link, a server-side copy, a conditional put), which they resolve, and get the fallback
// where a store lacks it.
func TestOnlyStoreAndOutputBranchOnTheKindOfStore(t *testing.T) {
	for _, p := range goList(t, "./...") {
		pkg := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if pkg == "store" || pkg == "output" || strings.HasPrefix(pkg, "store/") || strings.HasPrefix(pkg, "output/") ||
			strings.HasPrefix(pkg, "bench/") || slices.Contains(testServers, pkg) {
			continue
		}
		for _, f := range p.GoFiles {
			data, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(data), "\n") {
				if code, _, _ := strings.Cut(line, "//"); storeKind.MatchString(code) {
					t.Errorf("%s/%s:%d branches on the kind of store (%s): ask store or output for the ability instead", pkg, f, i+1, storeKind.FindString(code))
				}
			}
		}
	}
}

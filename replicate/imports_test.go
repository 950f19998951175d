package replicate

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The workers see decoded changes (source/kafka's Change), never kafka-go's messages: kafka-go is
// imported only by the consumer group and its offset commits (replicator.go) and the group's
// start offset (config.go). Fetching and decoding live in source/kafka.
func TestKafkaGoOnlyInGroupCode(t *testing.T) {
	allowed := []string{"config.go", "replicator.go"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fs := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fs, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/segmentio/kafka-go") && !slices.Contains(allowed, f) {
				t.Errorf("%s imports %s: replicate's workers work on source/kafka's decoded changes", f, path)
			}
		}
	}
}

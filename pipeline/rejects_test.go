package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRejectLogModes: a non-negative length truncates (resume), a negative one appends
// (replicate), and the Kafka coordinates appear only when set, partition 0 included.
func TestRejectLogModes(t *testing.T) {
	path := filepath.Join(t.TempDir(), RejectsFile)
	l, err := OpenRejectLog(path, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add(&Reject{Position: "a:1", Code: "type"}); err != nil {
		t.Fatal(err)
	}
	size, _, counts, err := l.Sync()
	if err != nil || counts["type"] != 1 {
		t.Fatalf("sync: %d %v %v", size, counts, err)
	}
	if err := l.Add(&Reject{Position: "a:2", Code: "type"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	if l, err = OpenRejectLog(path, size, nil); err != nil { // resume: drop the second line
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = OpenRejectLog(path, -1, nil); err != nil { // append
		t.Fatal(err)
	}
	if err := l.Add(&Reject{Position: "kafka:t/0:0", Code: "eval", KafkaMessage: &KafkaMessage{Topic: "t"}}); err != nil {
		t.Fatal(err)
	}
	end, _, _, err := l.Sync()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != end {
		t.Errorf("file has %d bytes, Sync said %d", len(data), end)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), data)
	}
	if strings.Contains(lines[0], "topic") {
		t.Errorf("line without Kafka coordinates names a topic: %s", lines[0])
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"topic", "partition", "offset"} {
		if _, ok := m[k]; !ok {
			t.Errorf("Kafka reject lacks %q: %s", k, lines[1])
		}
	}
}

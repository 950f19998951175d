package output

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
)

// TestRejectLogResume: a resume cuts the rejects to the checkpointed length, and a message's
// coordinates appear only when set, partition 0 included.
func TestRejectLogResume(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, RejectsFile)
	l, err := openRejects(localStore(t, dir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add(&Reject{Position: "a:1", Code: "type"}); err != nil {
		t.Fatal(err)
	}
	size, _, counts, err := l.Sync(context.Background())
	if err != nil || counts["type"] != 1 {
		t.Fatalf("sync: %d %v %v", size, counts, err)
	}
	if err := l.Add(&Reject{Position: "a:2", Code: "type"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// resume: drop the second line
	if l, err = openRejects(localStore(t, dir), &pipeline.Checkpoint{RejectsBytes: size}, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Add(&Reject{Position: "kafka:t/0:0", Code: "eval", LogPosition: &LogPosition{Topic: "t"}}); err != nil {
		t.Fatal(err)
	}
	end, _, _, err := l.Sync(context.Background())
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

// A rejects line keeps its bytes whoever writes it: the fields in this order, a message's
// coordinates (topic, partition, offset, key) last and only when set.
func TestRejectLineBytes(t *testing.T) {
	for _, c := range []struct {
		rj   Reject
		want string
	}{
		{Reject{Position: "orders.csv:3", Stream: "orders.csv", Seq: 2, Stage: "transform", Code: "type", Field: "amount", Message: "not a number", Raw: "a,b"},
			`{"position":"orders.csv:3","stream":"orders.csv","seq":2,"stage":"transform","code":"type","field":"amount","message":"not a number","raw":"a,b"}`},
		{Reject{Position: "kafka:t/0:7", Stream: "t/0", Stage: "source", Code: "parse", Message: "bad json", Values: map[string]string{"id": "1"},
			LogPosition: &LogPosition{Topic: "t", Partition: 0, Offset: 7, Key: "k"}},
			`{"position":"kafka:t/0:7","stream":"t/0","seq":0,"stage":"source","code":"parse","message":"bad json","values":{"id":"1"},"topic":"t","partition":0,"offset":7,"key":"k"}`},
	} {
		got, err := json.Marshal(&c.rj)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("line\n%s\nwant\n%s", got, c.want)
		}
	}
}

// The two layouts of an output's rejects (a folder's rejects.jsonl cut to the checkpointed
// length, an object store's numbered parts the checkpoint counts) are read back alike by
// ReadRejects: the lines the checkpoint counts, in order, and none written after it, which a
// resume reads again.
func TestRejectsLayoutsReadBackAlike(t *testing.T) {
	read := func(st store.Store, cp *pipeline.Checkpoint) []string {
		t.Helper()
		var text strings.Builder
		err := ReadRejects(context.Background(), st, cp, func(_ string, r io.Reader) error {
			_, err := io.Copy(&text, r)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.SplitAfter(text.String(), "\n")
	}
	var want []string
	for name, st := range map[string]store.Store{"folder": localStore(t, t.TempDir()), "bucket": newBucket(t, t.TempDir())} {
		l, err := openRejects(st, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := read(st, nil); len(got) != 1 || got[0] != "" {
			t.Fatalf("%s: rejects before any was written: %q", name, got)
		}
		cp := &pipeline.Checkpoint{}
		for cut := 0; cut < 3; cut++ {
			for i := 0; i < 2; i++ {
				if err := l.Add(&Reject{Position: fmt.Sprintf("a:%d", 10*cut+i), Code: "type"}); err != nil {
					t.Fatal(err)
				}
			}
			if cp.RejectsBytes, _, _, err = l.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			cp.RejectParts = l.Parts()
		}
		// a line after the last checkpoint: a killed run's
		if err := l.Add(&Reject{Position: "a:99", Code: "type"}); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		got := read(st, cp)
		if len(got) != 7 || got[6] != "" || strings.Contains(strings.Join(got, ""), `"a:99"`) {
			t.Fatalf("%s: read back %q, want the 6 checkpointed lines", name, got)
		}
		if want == nil {
			want = got
		} else if !slices.Equal(got, want) {
			t.Fatalf("%s: read back %q, the other layout %q", name, got, want)
		}
	}
}

// TestRejectLogResumeRefusesALink: on a resume, a symbolic link in place of rejects.jsonl (it
// leads outside the output) is refused, naming it, and the file it leads to is neither cut to the
// checkpointed length nor appended to. Before, both were done to it, the raw rows of the rejects
// landing in a file of any mode outside the output.
func TestRejectLogResumeRefusesALink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious.txt")
	const precious = "precious bytes, longer than the checkpointed rejects\n"
	if err := os.WriteFile(outside, []byte(precious), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, RejectsFile)); err != nil {
		t.Fatal(err)
	}
	l, err := openRejects(localStore(t, dir), &pipeline.Checkpoint{RejectsBytes: 10}, nil)
	if err == nil {
		l.Add(&Reject{Position: "a:1", Code: "type"})
		l.Sync(context.Background())
		l.Close()
	}
	if data, _ := os.ReadFile(outside); string(data) != precious {
		t.Fatalf("the file the link leads to now holds %q (open: %v)", data, err)
	}
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), RejectsFile) {
		t.Fatalf("resume with %s a link: %v, want it refused as a symbolic link", RejectsFile, err)
	}
}

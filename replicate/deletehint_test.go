package replicate

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/transform"
)

// PostgreSQL's delete event under its default REPLICA IDENTITY holds the primary key alone in
// "before" (the captured event, testdata/debezium-connect-json-events.jsonl of source/kafka,
// written by the connector's own jars): a target key computed from another column cannot name
// the row to delete. The reject says why and what to do (REPLICA IDENTITY FULL, and the row left
// in the table to delete), as the update's does. Before, it said only that the key column was
// null, and the row stayed in the table with no hint of either.
func TestRelationalDeleteWithoutTheKeysColumnsSaysWhatToDo(t *testing.T) {
	f, err := os.Open("../source/kafka/testdata/debezium-connect-json-events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var key, value json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			Name    string
			Schemas bool
			Key     json.RawMessage
			Value   json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m.Name == "delete" && !m.Schemas {
			key, value = m.Key, m.Value
		}
	}
	if value == nil {
		t.Fatal("the captured delete is missing")
	}
	m, err := transform.Decode([]byte("version: 1\nsource: {columns: {id: bigint, ts: timestamp(us), body: text}}\ntarget: {table: t, primary_key: '[body][id]'}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &Replicator{cfg: Config{Program: prog, Kafka: kafka.Config{Format: kafka.FormatDebezium}}, target: prog.Target(), log: zap.NewNop()}
	w := r.newPartWorker(0, nil, outputCaps{}, 2)
	chs := w.dec.Decode(nil, key, value)
	ops := w.operations(nil, &chs[0])
	if len(ops) != 1 || ops[0].kind != opReject || ops[0].err.Code != pipeline.CodeNullKey ||
		!strings.Contains(ops[0].err.Message, "REPLICA IDENTITY FULL") || !strings.Contains(ops[0].err.Message, "stays in the table") {
		var got []string
		for _, op := range ops {
			got = append(got, describe(op, r.target.KeyLen))
		}
		t.Errorf("delete whose before image lacks body: %s; want the null_key reject saying REPLICA IDENTITY FULL and that the row stays", strings.Join(got, "; "))
	}
}

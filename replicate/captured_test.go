package replicate

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/transform"
)

// capturedProgram compiles a mapping of the table Debezium's Cassandra connector was captured on
// (source/kafka/testdata/debezium-cassandra5-events.jsonl: a, b, c, x, y), keyed by key.
func capturedProgram(t *testing.T, key string) *transform.Program {
	t.Helper()
	return tableProgram(t, "version: 1\nsource: {columns: {a: int, b: int, c: int, x: text, y: int}}\ntarget: {table: t, primary_key: '"+key+"'}\n")
}

// capturedEvent is one captured message: the CQL statement that made it, its key and its value.
type capturedEvent struct {
	CQL        string
	Key, Value json.RawMessage
}

// capturedEvents reads the connector's captured messages, in the order captured.
func capturedEvents(t *testing.T) []capturedEvent {
	t.Helper()
	f, err := os.Open("../source/kafka/testdata/debezium-cassandra5-events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []capturedEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev capturedEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// capturedMessages are the events as one partition's messages, from offset 0.
func capturedMessages(evs []capturedEvent) []kafkago.Message {
	msgs := make([]kafkago.Message, len(evs))
	for i, ev := range evs {
		msgs[i] = kafkago.Message{Offset: int64(i), Key: ev.Key, Value: ev.Value}
	}
	return msgs
}

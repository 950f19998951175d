package kafka

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// A mapping pointed at one of Debezium's other topics reads messages that are no row change: a
// heartbeat (__debezium-heartbeat.PREFIX: io.debezium.connector.common.Heartbeat {ts_ms}), a
// transaction's BEGIN or END (PREFIX.transaction: status, id, event_count, data_collections) or a
// schema change (the PREFIX topic: databaseName, schemaName, ddl, tableChanges). Each is refused
// saying what it is and which topic to read instead, not applied. Before, each was refused as "not
// a Debezium change event: no op field (use format=json for plain rows)", which sent the user to
// a format that reads them as rows.
func TestDebeziumMessagesThatAreNoChange(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "id", Type: "text"}, {Name: "status", Type: "text"}}
	for _, c := range []struct{ name, key, value, says string }{
		{"heartbeat", `{"serverName":"srv"}`, `{"ts_ms":1700000000000}`, "heartbeat"},
		{"heartbeat with schema", `{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"serverName"}],"optional":false,"name":"io.debezium.connector.common.ServerNameKey"},"payload":{"serverName":"srv"}}`,
			`{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"ts_ms"}],"optional":false,"name":"io.debezium.connector.common.Heartbeat"},"payload":{"ts_ms":1700000000000}}`, "heartbeat"},
		{"transaction begin", `{"id":"571:53195829"}`, `{"status":"BEGIN","id":"571:53195829","ts_ms":1700000000000,"event_count":null,"data_collections":null}`, "transaction"},
		{"transaction end", `{"id":"571:53195829"}`, `{"status":"END","id":"571:53195829","ts_ms":1700000000000,"event_count":2,"data_collections":[{"data_collection":"s1.a","event_count":1}]}`, "transaction"},
		{"schema change", `{"databaseName":"inventory"}`, `{"source":{"connector":"mysql","db":"inventory","table":"customers"},"ts_ms":1700000000000,"databaseName":"inventory","schemaName":null,"ddl":"ALTER TABLE customers ADD COLUMN x INT","tableChanges":[]}`, "schema change"},
	} {
		d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
		if err != nil {
			t.Fatal(err)
		}
		ch := d.Decode(nil, []byte(c.key), []byte(c.value))[0]
		if ch.Err == nil {
			t.Fatalf("%s: applied as %v %v", c.name, ch.Op, ch.Values)
		}
		if ch.Err.Code != CodeUnsupported || !strings.Contains(ch.Err.Message, c.says) || !strings.Contains(ch.Err.Message, "topic") || strings.Contains(ch.Err.Message, "format=json") {
			t.Errorf("%s: %s %q; want %s, saying it is a %s message and which topic to read", c.name, ch.Err.Code, ch.Err.Message, CodeUnsupported, c.says)
		}
	}
}

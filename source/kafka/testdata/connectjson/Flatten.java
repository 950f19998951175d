// Flatten writes the messages of a relational Debezium connector after Debezium's
// ExtractNewRecordState transform (io.debezium.transforms.ExtractNewRecordState), as Kafka
// Connect's JsonConverter publishes them, with and without schemas: a create, an update and a
// delete under each of the transform's delete.tombstone.handling.mode settings that keep deletes,
// and under rewrite with add.fields=op,table. One JSON line a message: its name, the mode,
// whether it carries schemas, the key and the value (null: a tombstone). Run from this folder,
// with the connector's jars that deploy/dev/peers.sh resolves and Kafka Connect's transforms
// (the transform extends them; not among the connector's jars):
//
//   mvn dependency:copy -Dartifact=org.apache.kafka:connect-transforms:4.1.1 -DoutputDirectory=/tmp/ct
//   java -cp "$(ls ~/.cache/rekey-peers/debezium-3.4.1.Final/*.jar /tmp/ct/*.jar | tr '\n' :)" Flatten.java ../debezium-flattened-events.jsonl
import io.debezium.data.Envelope;
import io.debezium.transforms.ExtractNewRecordState;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;

public class Flatten {
    static final Schema KEY = SchemaBuilder.struct().name("srv.inventory.orders.Key")
            .field("id", Schema.INT64_SCHEMA)
            .build();
    static final Schema ROW = SchemaBuilder.struct().name("srv.inventory.orders.Value").optional()
            .field("id", Schema.INT64_SCHEMA)
            .field("name", Schema.OPTIONAL_STRING_SCHEMA)
            .field("qty", Schema.OPTIONAL_INT32_SCHEMA)
            .build();
    static final Schema SOURCE = SchemaBuilder.struct().name("io.debezium.connector.mysql.Source")
            .field("connector", Schema.STRING_SCHEMA)
            .field("db", Schema.STRING_SCHEMA)
            .field("table", Schema.STRING_SCHEMA)
            .field("ts_ms", Schema.INT64_SCHEMA)
            .build();
    static final Envelope ENV = Envelope.defineSchema().withName("srv.inventory.orders.Envelope")
            .withRecord(ROW).withSource(SOURCE).build();
    static final Instant AT = Instant.ofEpochMilli(1700000001000L);

    static PrintStream out;

    public static void main(String[] args) throws Exception {
        out = new PrintStream(args[0], StandardCharsets.UTF_8); // stdout: the libraries' logs
        Struct source = new Struct(SOURCE).put("connector", "mysql").put("db", "inventory")
                .put("table", "orders").put("ts_ms", 1700000000999L);
        Struct created = row(1, "a", 5);
        Struct updated = row(1, "b", null);
        Struct other = row(2, "c", 7);
        String[][] modes = {
            {"tombstone", null}, {"rewrite", null}, {"rewrite-with-tombstone", null}, {"rewrite", "op,table"},
        };
        for (String[] m : modes) {
            Map<String, String> cfg = new HashMap<>();
            cfg.put("delete.tombstone.handling.mode", m[0]);
            if (m[1] != null) {
                cfg.put("add.fields", m[1]);
            }
            String mode = m[0] + (m[1] == null ? "" : " add.fields=" + m[1]);
            emit("create", mode, cfg, key(1), ENV.create(created, source, AT));
            emit("create other", mode, cfg, key(2), ENV.create(other, source, AT));
            emit("update", mode, cfg, key(1), ENV.update(created, updated, source, AT));
            emit("delete", mode, cfg, key(1), ENV.delete(updated, source, AT));
        }
        out.close();
    }

    static Struct key(long id) {
        return new Struct(KEY).put("id", id);
    }

    static Struct row(long id, String name, Integer qty) {
        return new Struct(ROW).put("id", id).put("name", name).put("qty", qty);
    }

    // emit writes what the transform makes of one envelope: a delete may become two messages
    // (the rewritten row and a tombstone) or none.
    static void emit(String name, String mode, Map<String, String> cfg, Struct key, Struct envelope) {
        for (boolean schemas : new boolean[] {true, false}) {
            ExtractNewRecordState<SourceRecord> smt = new ExtractNewRecordState<>();
            smt.configure(cfg);
            SourceRecord in = new SourceRecord(Map.of(), Map.of(), "srv.inventory.orders", 0,
                    KEY, key, ENV.schema(), envelope);
            SourceRecord rec = smt.apply(in);
            if (rec != null) {
                line(name, mode, schemas, rec);
            }
            if (envelope.getString("op").equals("d") && mode.startsWith("rewrite-with-tombstone")) {
                // the connector's own tombstone after a delete (tombstones.on.delete), which this
                // mode passes on
                line(name + " tombstone", mode, schemas, smt.apply(new SourceRecord(Map.of(), Map.of(),
                        "srv.inventory.orders", 0, KEY, key, null, null)));
            }
            smt.close();
        }
    }

    static void line(String name, String mode, boolean schemas, ConnectRecord<?> rec) {
        String k = json(rec.keySchema(), rec.key(), true, schemas);
        String v = rec.value() == null ? "null" : json(rec.valueSchema(), rec.value(), false, schemas);
        out.println("{\"name\":\"" + name + "\",\"mode\":\"" + mode + "\",\"schemas\":" + schemas
                + ",\"key\":" + k + ",\"value\":" + v + "}");
    }

    static String json(Schema schema, Object value, boolean isKey, boolean schemas) {
        JsonConverter c = new JsonConverter();
        c.configure(Map.of("schemas.enable", String.valueOf(schemas)), isKey);
        return new String(c.fromConnectData("srv.inventory.orders", schema, value), StandardCharsets.UTF_8);
    }
}

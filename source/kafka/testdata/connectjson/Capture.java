// Capture writes the change events of a relational Debezium connector as it publishes them:
// Debezium's own envelope (io.debezium.data.Envelope), its logical types (MicroTimestamp,
// VariableScaleDecimal, Kafka Connect's Decimal) and Kafka Connect's JsonConverter, with and
// without schemas, key and value. One JSON line a message: its name, whether it carries schemas,
// the key and the value (null: a tombstone). Run from this folder, with the connector's jars that
// deploy/dev/peers.sh resolves:
//
//   java -cp "$(ls ~/.cache/rekey-peers/debezium-3.4.1.Final/*.jar | tr '\n' :)" Capture.java ../debezium-connect-json-events.jsonl
import io.debezium.data.Envelope;
import io.debezium.data.VariableScaleDecimal;
import io.debezium.time.MicroTimestamp;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;

public class Capture {
    // the placeholder of a value the connector did not get from the database (PostgreSQL's
    // unchanged TOASTed columns: unavailable.value.placeholder's default)
    static final String UNAVAILABLE = "__debezium_unavailable_value";

    static final Schema KEY = SchemaBuilder.struct().name("srv.public.t.Key")
            .field("id", Schema.INT64_SCHEMA)
            .field("ts", MicroTimestamp.builder().build())
            .build();
    static final Schema ROW = SchemaBuilder.struct().name("srv.public.t.Value").optional()
            .field("id", Schema.INT64_SCHEMA)
            .field("ts", MicroTimestamp.builder().build())
            .field("amt", Decimal.builder(2).parameter("connect.decimal.precision", "30").optional().build())
            .field("big", Decimal.builder(0).optional().build())
            .field("vs", VariableScaleDecimal.builder().optional().build())
            .field("body", Schema.OPTIONAL_STRING_SCHEMA)
            .field("pic", Schema.OPTIONAL_BYTES_SCHEMA)
            .build();
    static final Schema SOURCE = SchemaBuilder.struct().name("io.debezium.connector.postgresql.Source")
            .field("connector", Schema.STRING_SCHEMA)
            .field("ts_ms", Schema.INT64_SCHEMA)
            .build();
    static final Envelope ENV = Envelope.defineSchema().withName("srv.public.t.Envelope")
            .withRecord(ROW).withSource(SOURCE).build();
    static final Instant AT = Instant.ofEpochMilli(1700000001000L);

    static PrintStream out;

    public static void main(String[] args) throws Exception {
        out = new PrintStream(args[0], StandardCharsets.UTF_8); // stdout: the libraries' logs
        Struct source = new Struct(SOURCE).put("connector", "postgresql").put("ts_ms", 1700000000999L);
        Struct created = row(1, "12.34", "1234567890123456789012", "-1.234", "b", "p");
        Struct small = row(2, "0.05", "-128", "5", null, null);
        Struct updated = row(1, "-12.34", "-1234567890123456789012", "0.000001", UNAVAILABLE, UNAVAILABLE);
        Struct keyOnly = new Struct(ROW).put("id", 1L).put("ts", 1700000000123000L);
        emit("create", key(1), ENV.create(created, source, AT));
        emit("create below one", key(2), ENV.create(small, source, AT));
        emit("update with unavailable values", key(1), ENV.update(null, updated, source, AT));
        emit("delete", key(1), ENV.delete(keyOnly, source, AT));
        emit("tombstone", key(1), null);
        out.close();
    }

    static Struct key(long id) {
        return new Struct(KEY).put("id", id).put("ts", 1700000000123000L);
    }

    static Struct row(long id, String amt, String big, String vs, String body, String pic) {
        Struct r = new Struct(ROW).put("id", id).put("ts", 1700000000123000L)
                .put("amt", new BigDecimal(amt)).put("big", new BigDecimal(big))
                .put("vs", VariableScaleDecimal.fromLogical(ROW.field("vs").schema(), new BigDecimal(vs)))
                .put("body", body);
        if (pic != null) {
            r.put("pic", pic.getBytes(StandardCharsets.UTF_8));
        }
        return r;
    }

    static void emit(String name, Struct key, Struct value) {
        for (boolean schemas : new boolean[] {true, false}) {
            String k = json(key, true, schemas);
            String v = value == null ? "null" : json(value, false, schemas);
            out.println("{\"name\":\"" + name + "\",\"schemas\":" + schemas + ",\"key\":" + k + ",\"value\":" + v + "}");
        }
    }

    static String json(Struct s, boolean isKey, boolean schemas) {
        JsonConverter c = new JsonConverter();
        c.configure(Map.of("schemas.enable", String.valueOf(schemas)), isKey);
        return new String(c.fromConnectData("srv.public.t", s.schema(), s), StandardCharsets.UTF_8);
    }
}

// SparkRead reads folders the way Lindorm's bulkload (LTS, a Spark job) reads rekey's outputs and
// prints every row as a JSON line, its types rendered so that nothing is ambiguous: decimals as
// strings (plain form), timestamps as epoch milliseconds, dates as ISO text, binary as base64,
// NaN and infinities as strings. spark.sh compiles it against the jars Maven copied and runs it.
//
// Usage: SparkRead [--out FILE] [--csv-schema DDL] [--row-reader] DIR | --job BULKLOAD_JSON ...
//   DIR                 spark.read().parquet(DIR), or with --csv-schema spark.read().schema(DDL)
//                       .option("header", true).csv(DIR)
//   --job BULKLOAD_JSON the job as LTS would run it from rekey's bulkload.json: readerConfig.filePath,
//                       fileType (Parquet or CSV), readerConfig.column (names for Parquet; for CSV
//                       {name, type} entries with Lindorm SQL types, mapped to Spark's), header and
//                       delimiter
//   --out FILE          where the next folder's lines go (default: stdout)
//   --csv-schema DDL    the next folder is CSV with this Spark DDL schema ("id BIGINT, v STRING")
//   --row-reader        read the next Parquet folder with Spark's row-based reader (parquet-mr's
//                       converters) instead of the vectorized one, the other path a job may take
// One JVM reads every folder given, in order. Each folder's lines are
//   {"read": PATH, "format": "parquet"|"csv", "files": [what Spark's listing picked up], "schema": [{"name", "type"}]}
//   {"row": {COLUMN: VALUE, ...}, "file": FILE}    one per row
//   {"end": {"rows": N}} or {"error": MESSAGE}
// and the exit status is 1 when any folder failed to read.
// --module-options prints Spark's JVM options for JDK 17 (its JavaModuleOptions) and exits.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.Writer;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.DataFrameReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

public final class SparkRead {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** One folder to read. */
  private static final class Task {
    String path;        // the folder Spark lists
    String format;      // parquet or csv
    StructType schema;  // csv: the columns, in file order
    List<String> columns = new ArrayList<>(); // parquet: the job's columns (empty: all)
    boolean header = true;
    String delimiter = ",";
    String out;         // null: stdout
    boolean rowReader;  // parquet: spark.sql.parquet.enableVectorizedReader=false
  }

  public static void main(String[] args) throws Exception {
    if (args.length == 1 && args[0].equals("--module-options")) {
      System.out.println(org.apache.spark.launcher.JavaModuleOptions.defaultModuleOptions());
      return;
    }
    List<Task> tasks = parseArgs(args);
    if (tasks.isEmpty()) {
      System.err.println("usage: SparkRead [--out FILE] [--csv-schema DDL] DIR | --job BULKLOAD_JSON ...");
      System.exit(2);
    }
    SparkSession spark = SparkSession.builder()
        .appName("rekey-spark-read")
        .master(System.getProperty("rekey.spark.master", "local[2]"))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        // java.time values: LocalDate and Instant are proleptic Gregorian, as Spark's own
        // DateType and TimestampType are (java.sql.Date would shift ancient dates to Julian).
        .config("spark.sql.datetime.java8API.enabled", "true")
        .getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    boolean failed = false;
    PrintWriter stdout = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
    for (Task t : tasks) {
      PrintWriter w = t.out == null ? stdout
          : new PrintWriter(new OutputStreamWriter(new FileOutputStream(t.out), StandardCharsets.UTF_8));
      try {
        read(spark, t, w);
      } catch (Exception e) {
        failed = true;
        ObjectNode err = JSON.createObjectNode();
        err.put("error", rootMessage(e));
        w.println(JSON.writeValueAsString(err));
        System.err.println("spark read " + t.path + ": " + rootMessage(e));
      } finally {
        w.flush();
        if (w != stdout) {
          w.close();
        }
      }
    }
    stdout.flush();
    spark.stop();
    System.exit(failed ? 1 : 0);
  }

  private static List<Task> parseArgs(String[] args) throws Exception {
    List<Task> tasks = new ArrayList<>();
    String out = null;
    String ddl = null;
    boolean rowReader = false;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      switch (a) {
        case "--row-reader":
          rowReader = true;
          break;
        case "--out":
          out = need(args, ++i, a);
          break;
        case "--csv-schema":
          ddl = need(args, ++i, a);
          break;
        case "--job": {
          Task t = fromJob(Path.of(need(args, ++i, a)));
          t.out = out;
          t.rowReader = rowReader;
          if (ddl != null) {
            throw new IllegalArgumentException("--csv-schema does not apply to --job: the job names its columns");
          }
          tasks.add(t);
          out = null;
          rowReader = false;
          break;
        }
        default: {
          if (a.startsWith("--")) {
            throw new IllegalArgumentException("unknown option " + a);
          }
          Task t = new Task();
          t.path = a;
          t.out = out;
          t.rowReader = rowReader;
          if (ddl != null) {
            t.format = "csv";
            t.schema = StructType.fromDDL(ddl);
          } else {
            t.format = "parquet";
          }
          tasks.add(t);
          out = null;
          ddl = null;
          rowReader = false;
        }
      }
    }
    if (out != null || ddl != null || rowReader) {
      throw new IllegalArgumentException("--out, --csv-schema and --row-reader apply to the folder after them: none follows");
    }
    return tasks;
  }

  private static String need(String[] args, int i, String flag) {
    if (i >= args.length) {
      throw new IllegalArgumentException(flag + " needs a value");
    }
    return args[i];
  }

  /** fromJob configures a read as LTS would from bulkload.json's fields. */
  private static Task fromJob(Path job) throws Exception {
    JsonNode j = JSON.readTree(Files.readAllBytes(job));
    JsonNode rc = j.path("readerConfig");
    Task t = new Task();
    t.path = text(rc, "filePath", job);
    String fileType = text(j, "fileType", job);
    JsonNode cols = rc.path("column");
    if (!cols.isArray() || cols.size() == 0) {
      throw new IllegalArgumentException(job + ": readerConfig.column is not a list of columns");
    }
    switch (fileType) {
      case "Parquet":
        t.format = "parquet";
        for (JsonNode c : cols) {
          t.columns.add(c.asText());
        }
        break;
      case "CSV": {
        t.format = "csv";
        List<StructField> fields = new ArrayList<>();
        for (JsonNode c : cols) {
          fields.add(DataTypes.createStructField(text(c, "name", job), sparkType(text(c, "type", job)), true));
        }
        t.schema = DataTypes.createStructType(fields);
        if (rc.has("header")) {
          t.header = rc.get("header").asBoolean();
        }
        if (rc.has("delimiter")) {
          t.delimiter = rc.get("delimiter").asText();
        }
        break;
      }
      default:
        throw new IllegalArgumentException(job + ": fileType " + fileType + " is neither Parquet nor CSV");
    }
    return t;
  }

  private static String text(JsonNode n, String field, Path job) {
    JsonNode v = n.get(field);
    if (v == null || !v.isTextual()) {
      throw new IllegalArgumentException(job + ": no text field " + field);
    }
    return v.asText();
  }

  private static final Pattern DECIMAL = Pattern.compile("DECIMAL\\s*\\(\\s*(\\d+)\\s*,\\s*(\\d+)\\s*\\)");

  /** sparkType maps a Lindorm SQL type name to the Spark type a typed reader gives the column. */
  static DataType sparkType(String sql) {
    String u = sql.trim().toUpperCase();
    Matcher m = DECIMAL.matcher(u);
    if (m.matches()) {
      return DataTypes.createDecimalType(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)));
    }
    switch (u) {
      case "VARCHAR": case "CHAR": case "JSON": case "STRING":
        return DataTypes.StringType;
      case "BIGINT":
        return DataTypes.LongType;
      case "INTEGER": case "INT":
        return DataTypes.IntegerType;
      case "SMALLINT":
        return DataTypes.ShortType;
      case "TINYINT":
        return DataTypes.ByteType;
      case "BOOLEAN":
        return DataTypes.BooleanType;
      case "FLOAT":
        return DataTypes.FloatType;
      case "DOUBLE":
        return DataTypes.DoubleType;
      case "TIMESTAMP":
        return DataTypes.TimestampType;
      case "DATE":
        return DataTypes.DateType;
      case "VARBINARY": case "BINARY":
        return DataTypes.BinaryType;
      default:
        throw new IllegalArgumentException("no Spark type for Lindorm type " + sql);
    }
  }

  private static void read(SparkSession spark, Task t, PrintWriter w) throws Exception {
    Dataset<Row> df;
    spark.conf().set("spark.sql.parquet.enableVectorizedReader", String.valueOf(!t.rowReader));
    if (t.format.equals("parquet")) {
      df = spark.read().parquet(t.path);
      if (!t.columns.isEmpty()) {
        Column[] sel = new Column[t.columns.size()];
        for (int i = 0; i < sel.length; i++) {
          sel[i] = functions.col("`" + t.columns.get(i).replace("`", "``") + "`");
        }
        df = df.select(sel);
      }
    } else {
      DataFrameReader r = spark.read().schema(t.schema)
          .option("header", String.valueOf(t.header))
          .option("sep", t.delimiter);
      df = r.csv(t.path);
    }
    ObjectNode head = JSON.createObjectNode();
    head.put("read", t.path);
    head.put("format", t.format);
    if (t.format.equals("parquet")) {
      head.put("reader", t.rowReader ? "row" : "vectorized");
    }
    ArrayNode files = head.putArray("files");
    for (String f : df.inputFiles()) {
      files.add(f);
    }
    ArrayNode schema = head.putArray("schema");
    StructField[] fields = df.schema().fields();
    for (StructField f : fields) {
      ObjectNode c = schema.addObject();
      c.put("name", f.name());
      c.put("type", f.dataType().simpleString());
    }
    w.println(JSON.writeValueAsString(head));
    Dataset<Row> withFile = df.select(functions.col("*"), functions.col("_metadata.file_path"));
    long n = 0;
    Iterator<Row> it = withFile.toLocalIterator();
    while (it.hasNext()) {
      Row row = it.next();
      ObjectNode line = JSON.createObjectNode();
      ObjectNode vals = line.putObject("row");
      for (int i = 0; i < fields.length; i++) {
        put(vals, fields[i].name(), row.isNullAt(i) ? null : row.get(i));
      }
      line.put("file", row.getString(fields.length));
      w.println(JSON.writeValueAsString(line));
      n++;
    }
    ObjectNode end = JSON.createObjectNode();
    end.putObject("end").put("rows", n);
    w.println(JSON.writeValueAsString(end));
  }

  /** put renders one value: nothing a JSON reader could take for another type or round. */
  private static void put(ObjectNode o, String name, Object v) {
    if (v == null) {
      o.putNull(name);
    } else if (v instanceof String s) {
      o.put(name, s);
    } else if (v instanceof Boolean b) {
      o.put(name, b);
    } else if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long) {
      o.put(name, ((Number) v).longValue());
    } else if (v instanceof Float f) {
      if (f.isNaN() || f.isInfinite()) {
        o.put(name, f.toString());
      } else {
        o.put(name, f);  // Float.toString: the shortest text that reads back as this float (and -0.0)
      }
    } else if (v instanceof Double d) {
      if (d.isNaN() || d.isInfinite()) {
        o.put(name, d.toString());
      } else {
        o.put(name, d);
      }
    } else if (v instanceof BigDecimal d) {
      o.put(name, d.toPlainString());
    } else if (v instanceof Instant ts) {
      long sec = ts.getEpochSecond();
      int nano = ts.getNano();
      if (nano % 1_000_000 == 0) {
        o.put(name, Math.addExact(Math.multiplyExact(sec, 1000L), nano / 1_000_000));
      } else {
        // not a whole millisecond: never rounded into one
        o.put(name, ts.toString());
      }
    } else if (v instanceof LocalDate d) {
      o.put(name, d.toString());
    } else if (v instanceof LocalDateTime d) {
      o.put(name, d.toString());
    } else if (v instanceof byte[] b) {
      o.put(name, Base64.getEncoder().encodeToString(b));
    } else {
      o.put(name, "unrendered " + v.getClass().getName() + ": " + v);
    }
  }

  private static String rootMessage(Throwable e) {
    StringBuilder sb = new StringBuilder();
    Throwable c = e;
    for (int depth = 0; c != null && depth < 6; depth++, c = c.getCause()) {
      if (sb.length() > 0) {
        sb.append(" <- ");
      }
      sb.append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
    }
    return sb.toString();
  }
}

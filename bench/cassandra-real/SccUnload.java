// The Spark Cassandra Connector side of bench/run.sh's cassandra-real case: Spark in local[2]
// reads a Cassandra table through the connector and does what `rekey migrate -m
// mappings/orders.yaml` does (bench/duckdb.mjs does the same job from the CSV): pk1 =
// md5(userid)[0:4] + userid, channel codes, amount as DECIMAL(18,2), rows routed to 16 hex-prefix
// regions, zstd Parquet partitioned by region.
//
//   java ... SccUnload HOST PORT KEYSPACE TABLE OUTDIR   -> one JSON line: rows written (read back
//                                                           from the Parquet footers), the job's
//                                                           seconds, the scan's Spark partitions
//   java ... SccUnload --module-options                   -> Spark's JVM options for JDK 17
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.concat;
import static org.apache.spark.sql.functions.conv;
import static org.apache.spark.sql.functions.md5;
import static org.apache.spark.sql.functions.substring;
import static org.apache.spark.sql.functions.when;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

public class SccUnload {
  public static void main(String[] args) {
    if (args.length == 1 && args[0].equals("--module-options")) {
      System.out.println(org.apache.spark.launcher.JavaModuleOptions.defaultModuleOptions());
      return;
    }
    if (args.length != 5) {
      System.err.println("usage: SccUnload HOST PORT KEYSPACE TABLE OUTDIR");
      System.exit(2);
    }
    SparkSession spark = SparkSession.builder().master("local[2]").appName("scc-unload")
        .config("spark.ui.enabled", "false")
        .config("spark.cassandra.connection.host", args[0])
        .config("spark.cassandra.connection.port", args[1])
        .config("spark.sql.parquet.compression.codec", "zstd")
        // Spark's default INT96 timestamps are what rekey never writes; microseconds are Parquet's own
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .getOrCreate();
    long t0 = System.nanoTime();
    Dataset<Row> in = spark.read().format("org.apache.spark.sql.cassandra")
        .option("keyspace", args[2]).option("table", args[3]).load();
    Column h = md5(col("userid").cast("binary"));
    Column ch = col("channel");
    Dataset<Row> out = in.select(
        concat(substring(h, 1, 4), col("userid")).as("pk1"),
        col("orderid"),
        when(ch.equalTo("taobao"), "tb").when(ch.equalTo("alipay"), "ap").when(ch.equalTo("wechat"), "wx")
            .when(ch.equalTo("jd"), "jd").when(ch.equalTo("pdd"), "pd").otherwise(ch).as("channel"),
        col("ts"), col("status"), col("location"),
        col("amount").cast("decimal(18,2)").as("amount"),
        conv(substring(h, 1, 1), 16, 10).cast("int").as("region"));
    int partitions = out.rdd().getNumPartitions();
    out.write().mode("overwrite").partitionBy("region").parquet(args[4]);
    double job = (System.nanoTime() - t0) / 1e9;
    long rows = spark.read().parquet(args[4]).count();
    System.out.println("{\"rows\": " + rows + ", \"job_seconds\": " + job + ", \"partitions\": " + partitions + "}");
    spark.stop();
  }
}

// The reference for the core benchmark: DuckDB does the same job as `rekey migrate` with
// mappings/orders.yaml: read the orders CSV, build pk1 = md5(userid)[0:4] + userid, map channel
// codes, route rows to 16 hex-prefix regions and write zstd Parquet partitioned by region.
// Usage: node duckdb.mjs CSV OUTDIR ROWS [AMOUNT_TYPE]  -> prints one JSON line with seconds, rows/s,
// peak RSS. AMOUNT_TYPE is amount's Parquet type: DECIMAL(18,2) (mappings/orders.yaml, the default)
// or DECIMAL(38,18) (bench/orders-decimal.yaml, the unscaled Cassandra decimal).
import { DuckDBInstance } from '@duckdb/node-api';

const [csv, out, rows, amountType = 'DECIMAL(18,2)'] = process.argv.slice(2);
if (!/^DECIMAL\(\d+,\d+\)$/.test(amountType)) throw new Error(`amount type ${amountType}: want DECIMAL(P,S)`);
const inst = await DuckDBInstance.create(':memory:', { threads: '2' });
const con = await inst.connect();
const sql = `
COPY (
  SELECT md5(userid)[1:4] || userid AS pk1,
         orderid,
         CASE channel WHEN 'taobao' THEN 'tb' WHEN 'alipay' THEN 'ap' WHEN 'wechat' THEN 'wx'
                      WHEN 'jd' THEN 'jd' WHEN 'pdd' THEN 'pd' ELSE channel END AS channel,
         ts, status, location, amount,
         instr('0123456789abcdef', md5(userid)[1:1]) - 1 AS region
  FROM read_csv('${csv}', header = true, columns = {
    'userid': 'VARCHAR', 'orderid': 'BIGINT', 'channel': 'VARCHAR', 'ts': 'BIGINT',
    'status': 'VARCHAR', 'location': 'VARCHAR', 'amount': '${amountType}'})
) TO '${out}' (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (region), OVERWRITE_OR_IGNORE)`;
const t0 = performance.now();
await con.run(sql);
const seconds = (performance.now() - t0) / 1000;
console.log(JSON.stringify({
  seconds, rows_per_sec: Number(rows) / seconds,
  peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
}));

// The store case's readback: DuckDB reads the data files of two outputs of the same job (the
// local folder, and the objects downloaded from the S3 server) and compares what they hold.
// Usage: node readback.mjs LOCAL_OUT STORE_OUT ROWS
// Prints one JSON line; exits 1 when the two differ or either does not hold ROWS rows.
import { DuckDBInstance } from '@duckdb/node-api';

const [local, store, rows] = process.argv.slice(2);
const inst = await DuckDBInstance.create(':memory:', { threads: '2' });
const con = await inst.connect();
// count, a sum of a numeric column, distinct keys, and a checksum of every value of every row
// (order-independent: a sum of row hashes), over data/**/*.parquet only: nothing else may be there.
const figures = async (dir) => {
  const r = await con.runAndReadAll(`
    SELECT count(*) AS rows, sum(amount) AS amount_sum,
           count(DISTINCT (pk1, orderid)) AS distinct_keys,
           sum(hash(pk1, orderid, channel, ts, status, location, amount)) AS checksum,
           count(DISTINCT filename) AS files
    FROM read_parquet('${dir}/data/**/*.parquet', filename = true)`);
  const row = r.getRowObjects()[0];
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, String(v)]));
};
const t0 = performance.now();
const a = await figures(local);
const b = await figures(store);
const same = JSON.stringify(a) === JSON.stringify(b);
const ok = same && a.rows === String(rows) && a.distinct_keys === String(rows);
console.log(JSON.stringify({ ok, same, local: a, store: b, seconds: (performance.now() - t0) / 1000 }));
process.exit(ok ? 0 : 1);

// The core benchmark's wide shape (bench/wide.yaml) on DuckDB.
//   node duckdb-wide.mjs gen CSV ROWS       writes the wide CSV: ROWS rows of 30 columns of mixed
//                                           types, every column but id empty (null) in about half
//                                           the rows, the same rows for the same ROWS
//   node duckdb-wide.mjs job CSV OUTDIR ROWS does `rekey migrate -m bench/wide.yaml`'s job: reads
//                                           the CSV with the mapping's types, pk1 = md5(id)[0:4] + id,
//                                           16 hex-prefix regions, zstd Parquet partitioned by
//                                           region; prints one JSON line with seconds, rows/s, peak RSS
import { DuckDBInstance } from '@duckdb/node-api';

const [mode, csv, ...rest] = process.argv.slice(2);
const inst = await DuckDBInstance.create(':memory:', { threads: '2' });
const con = await inst.connect();

// column name -> [DuckDB type as read, generator expression over row number i and column seed k]
const h = k => `(hash(i * 64 + ${k}) % 9223372036854775807)::BIGINT`; // k: the column's number, so that columns differ
const cols = {};
const add = (names, type, gen) => names.forEach(n => { cols[n] = [type, gen(Object.keys(cols).length + 1)]; });
add(['txt1', 'txt2', 'txt3'], 'VARCHAR', k => `['alpha','beta','gamma','delta','epsilon','zeta'][1 + ${h(k)} % 6]`);
add(['txt4', 'txt5'], 'VARCHAR', k => `'name-' || (${h(k)} % 50000)::VARCHAR`);
add(['txt6'], 'VARCHAR', k => `'free text ' || (${h(k)} % 1000000000)::VARCHAR || ' with some words in it'`);
add(['big1', 'big2', 'big3'], 'BIGINT', k => `(${h(k)} % 1000000000000)::BIGINT`);
add(['big4', 'big5', 'big6'], 'BIGINT', k => `(${h(k)} % 1000)::BIGINT - 500`);
add(['int1', 'int2', 'int3', 'int4'], 'INTEGER', k => `(${h(k)} % 100000)::INTEGER`);
add(['dbl1', 'dbl2', 'dbl3', 'dbl4'], 'DOUBLE', k => `(${h(k)} % 100000000)::DOUBLE / 1000`);
add(['dec1', 'dec2', 'dec3', 'dec4'], 'DECIMAL(18,2)', k => `((${h(k)} % 10000000)::BIGINT / 100)::DECIMAL(18,2)`);
add(['ts1', 'ts2'], 'BIGINT', k => `1704067200000 + i * 7 + (${h(k)} % 1000)::BIGINT`);
add(['flag1', 'flag2'], 'BOOLEAN', k => `${h(k)} % 2 = 0`);
add(['day1'], 'DATE', k => `DATE '2024-01-01' + (${h(k)} % 365)::INTEGER`);
const names = Object.keys(cols);
if (names.length !== 29) throw new Error(`${names.length + 1} columns, want 30`);

let sql;
if (mode === 'gen') {
  const [rows] = rest;
  // null in about half the rows, independently per column (bit 40 of another hash)
  const exprs = names.map((n, j) => `CASE WHEN (hash(i * 64 + ${40 + j}) >> 40) % 2 = 0 THEN NULL ELSE ${cols[n][1]} END AS ${n}`);
  sql = `COPY (SELECT 'w' || i::VARCHAR AS id, ${exprs.join(',\n  ')} FROM range(${Number(rows)}) t(i) ORDER BY i)
    TO '${csv}' (FORMAT csv, HEADER)`;
} else if (mode === 'job') {
  const [out] = rest;
  const types = ["'id': 'VARCHAR'", ...names.map(n => `'${n}': '${cols[n][0]}'`)].join(', ');
  sql = `
COPY (
  SELECT md5(id)[1:4] || id AS pk1, ${names.join(', ')},
         instr('0123456789abcdef', md5(id)[1:1]) - 1 AS region
  FROM read_csv('${csv}', header = true, columns = {${types}})
) TO '${out}' (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (region), OVERWRITE_OR_IGNORE)`;
} else {
  throw new Error('usage: node duckdb-wide.mjs gen CSV ROWS | job CSV OUTDIR ROWS');
}
const t0 = performance.now();
await con.run(sql);
const seconds = (performance.now() - t0) / 1000;
if (mode === 'job') {
  const rows = Number(rest[1]);
  console.log(JSON.stringify({ seconds, rows_per_sec: rows / seconds, peak_rss_bytes: process.resourceUsage().maxRSS * 1024 }));
}

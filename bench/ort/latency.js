// Median latency of ONNX Runtime (CPU provider) on one model and its inputs.
// usage: node latency.js MODEL.onnx INPUT_DIR THREADS RUNS WARMUP
'use strict';
const { openSession, timeRun } = require('./session');

async function main() {
  const [model, inputDir, threads, runs, warmup] = process.argv.slice(2);
  const s = await openSession(model, inputDir, threads);
  for (let i = 0; i < Number(warmup); i++) await timeRun(s);
  const times = [];
  for (let i = 0; i < Number(runs); i++) times.push(await timeRun(s));
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ median_ms: times[times.length >> 1], min_ms: times[0], max_ms: times[times.length - 1], runs: times.length }));
}

main().catch((e) => { console.error(e.message); process.exit(1); });

// ONNX Runtime's time per op type (its own profiler), to set beside `geopt run PLAN
// --profile`: the same session options as the latency benches, RUNS timed runs after
// WARMUP, the node events' durations summed per op type and divided by RUNS; then the
// NODES slowest nodes by name (beside `geopt run --profile`'s slowest kernels).
// usage: node profile.js MODEL.onnx INPUT_DIR THREADS RUNS WARMUP [NODES]
'use strict';
const ort = require('onnxruntime-node');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { readNpy } = require('./npy');

async function main() {
  const [model, inputDir, threads, runs, warmup, nodes] = process.argv.slice(2);
  const prefix = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ort-profile-')), 'p');
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
    enableProfiling: true, profileFilePrefix: prefix,
  });
  const feeds = {};
  for (const name of session.inputNames) {
    const t = readNpy(path.join(inputDir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'));
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  for (let i = 0; i < Number(warmup); i++) await session.run(feeds);  // in the profile too: left out below
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < Number(runs); i++) await session.run(feeds);
  const wall = Number(process.hrtime.bigint() - t0) / 1e6 / Number(runs);
  await session.release();
  const dir = path.dirname(prefix);
  const written = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => path.join(dir, f));
  if (written.length !== 1) throw new Error('expected one profile file in ' + dir);
  const events = JSON.parse(fs.readFileSync(written[0], 'utf8'));
  // Runs are "model_run" events; node events between the warm-ups' and the last run's end count.
  const runEvents = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts);
  const timed = runEvents.slice(Number(warmup));
  if (timed.length === 0) throw new Error('no timed runs in the profile');
  const from = timed[0].ts, to = timed[timed.length - 1].ts + timed[timed.length - 1].dur;
  const byOp = {}, byNode = {};
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time') || e.ts < from || e.ts > to) continue;
    const op = e.args && e.args.op_name ? e.args.op_name : 'unknown';
    const row = byOp[op] || (byOp[op] = { ms: 0, calls: 0 });
    row.ms += e.dur / 1000;
    row.calls += 1;
    const node = e.name.slice(0, -'_kernel_time'.length);
    const n = byNode[node] || (byNode[node] = { op, ms: 0 });
    n.ms += e.dur / 1000;
  }
  const rows = Object.entries(byOp).sort((a, b) => b[1].ms - a[1].ms);
  console.log(`${model}: ${wall.toFixed(2)} ms per run (mean of ${runs}, profiling on)`);
  for (const [op, r] of rows)
    console.log(`  ${op.padEnd(28)} ${(r.ms / timed.length).toFixed(3).padStart(9)} ms  ${(r.calls / timed.length).toFixed(0).padStart(6)} calls`);
  const slowest = Object.entries(byNode).sort((a, b) => b[1].ms - a[1].ms).slice(0, Number(nodes || 0));
  if (slowest.length) console.log(`slowest nodes (of ${Object.keys(byNode).length}):`);
  for (const [node, n] of slowest)
    console.log(`  ${(n.ms / timed.length).toFixed(3).padStart(9)} ms  ${n.op.padEnd(20)} ${node}`);
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((e) => { console.error(e.message); process.exit(1); });

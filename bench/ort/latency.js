// Median latency of ONNX Runtime (CPU provider) on one model and its inputs.
// usage: node latency.js MODEL.onnx INPUT_DIR THREADS RUNS WARMUP
// INPUT_DIR holds <input name>.npy files (as `geopt run --save-inputs` writes them).
'use strict';
const ort = require('onnxruntime-node');
const path = require('path');
const { readNpy } = require('./npy');

async function main() {
  const [model, inputDir, threads, runs, warmup] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const name of session.inputNames) {
    const t = readNpy(path.join(inputDir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'));
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  for (let i = 0; i < Number(warmup); i++) await session.run(feeds);
  const times = [];
  for (let i = 0; i < Number(runs); i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ median_ms: times[times.length >> 1], min_ms: times[0], max_ms: times[times.length - 1], runs: times.length }));
}

main().catch((e) => { console.error(e.message); process.exit(1); });

// One ONNX Runtime session (CPU provider, level 'all') and its feeds, opened the same way
// by every bench script that times ONNX Runtime.
'use strict';
const ort = require('onnxruntime-node');
const path = require('path');
const { readNpy } = require('./npy');

// INPUT_DIR holds <input name>.npy files (as `geopt run --save-inputs` writes them).
async function openSession(model, inputDir, threads) {
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const name of session.inputNames) {
    const t = readNpy(path.join(inputDir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'));
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  return { session, feeds };
}

// The time of one run in milliseconds.
async function timeRun({ session, feeds }) {
  const t0 = process.hrtime.bigint();
  await session.run(feeds);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

module.exports = { openSession, timeRun };

// Each output's range over calibration samples, as onnxruntime's MinMax calibrator takes
// it: runs MODEL on every SAMPLE_DIR/<input>.npy and writes {output: [min, max]} to OUT.json
// (float outputs only). CPU provider, optimizations off.
// usage: node ranges.js MODEL.onnx OUT.json SAMPLE_DIR...
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { readNpy } = require('./npy');

const fileName = (name) => name.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy';

async function main() {
  const [model, out, ...samples] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, { graphOptimizationLevel: 'disabled', intraOpNumThreads: 2 });
  const ranges = {};
  for (const dir of samples) {
    const feeds = {};
    for (const name of session.inputNames) {
      const t = readNpy(path.join(dir, fileName(name)));
      feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
    }
    const outputs = await session.run(feeds);
    for (const [name, t] of Object.entries(outputs)) {
      if (t.type !== 'float32') continue;
      let lo = Infinity, hi = -Infinity;
      for (const v of t.data) {
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      const r = ranges[name] || [Infinity, -Infinity];
      ranges[name] = [Math.min(r[0], lo), Math.max(r[1], hi)];
    }
  }
  fs.writeFileSync(out, JSON.stringify(ranges));
}

main().catch((e) => { console.error(e.message || e); process.exit(1); });

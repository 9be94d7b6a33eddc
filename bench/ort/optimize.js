// ONNX Runtime doing geopt optimize's job: load a model, optimize it at level
// 'all', write the optimized model (optimizedModelFilePath).
// usage: node optimize.js MODEL.onnx OUT.onnx
'use strict';
const ort = require('onnxruntime-node');

async function main() {
  const [model, out] = process.argv.slice(2);
  await ort.InferenceSession.create(model, { graphOptimizationLevel: 'all', optimizedModelFilePath: out, intraOpNumThreads: 1 });
}

main().catch((e) => { console.error(e.message); process.exit(1); });

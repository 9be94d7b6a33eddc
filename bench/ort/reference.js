// ONNX Runtime's outputs as the reference for `geopt run --compare DIR`: runs MODEL on
// IN_DIR/<input>.npy (names as geopt run --save-inputs writes them) and writes
// OUT_DIR/<output>.npy. CPU provider, optimizations at 'disabled' so the reference is the
// model as written.
// usage: node reference.js MODEL.onnx IN_DIR OUT_DIR
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { readNpy } = require('./npy');

const DESCR = {
  float32: '<f4', float64: '<f8', int64: '<i8', int32: '<i4', bool: '|b1', uint8: '|u1', int8: '|i1', float16: '<f2',
};
const fileName = (name) => name.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy';

function writeNpy(file, tensor) {
  const descr = DESCR[tensor.type];
  if (!descr) throw new Error(`${file}: cannot write dtype ${tensor.type}`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const prefix = Buffer.alloc(10);
  prefix.write('\x93NUMPY', 0, 'latin1');
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([prefix, Buffer.from(header, 'latin1'), data]));
}

async function main() {
  const [model, inDir, outDir] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
  const feeds = {};
  for (const name of session.inputNames) {
    const t = readNpy(path.join(inDir, fileName(name)));
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  const outputs = await session.run(feeds);
  fs.mkdirSync(outDir, { recursive: true });
  for (const name of session.outputNames) writeNpy(path.join(outDir, fileName(name)), outputs[name]);
}

main().catch((e) => { console.error(e.message); process.exit(1); });

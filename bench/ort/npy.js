// Minimal .npy reader (C order, little-endian) for the benchmark scripts.
'use strict';
const fs = require('fs');

const TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '|b1': ['bool', Uint8Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array],
  '<f2': ['float16', Uint16Array],
};

function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']*)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const [type, Ctor] = TYPES[descr] || [];
  if (!type) throw new Error(`${path}: unsupported dtype ${descr}`);
  const data = buf.subarray(start + headerLen);
  const copy = new Uint8Array(data.length);
  copy.set(data);
  return { type, dims: shape, data: new Ctor(copy.buffer) };
}

module.exports = { readNpy };

// PaddleOCR's CTC decoding of the recognizer's output: the best class per time step,
// repeats merged, blanks (class 0) dropped; class i is line i of the key file, and the
// class after the last line is a space (use_space_char).
// usage: node ctc_decode.js KEYS.txt OUTPUT.npy...   (prints one text per line)
'use strict';
const fs = require('fs');
const { readNpy } = require('../ort/npy');

const keys = fs.readFileSync(process.argv[2], 'utf8').split('\n');
if (keys[keys.length - 1] === '') keys.pop();
const classes = ['', ...keys, ' '];
for (const file of process.argv.slice(3)) {
  const { data, dims: shape } = readNpy(file);
  const [steps, n] = shape.slice(-2);
  let text = '', last = -1;
  for (let t = 0; t < steps; ++t) {
    let best = 0;
    for (let c = 1; c < n; ++c) if (data[t * n + c] > data[t * n + best]) best = c;
    if (best !== last && best !== 0) text += classes[best] ?? '?';
    last = best;
  }
  console.log(text);
}

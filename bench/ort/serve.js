// ONNX Runtime as one side of bench/ab_bench.cpp: it opens one session, answers "ready",
// then for each line "run K" on standard input runs the model K times and answers with
// the K times in milliseconds on one line. It ends at end of input.
// usage: node serve.js MODEL.onnx INPUT_DIR THREADS
'use strict';
const readline = require('readline');
const { openSession, timeRun } = require('./session');

async function main() {
  const [model, inputDir, threads] = process.argv.slice(2);
  const s = await openSession(model, inputDir, threads);
  console.log('ready');
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const m = /^run (\d+)$/.exec(line.trim());
    if (!m) throw new Error(`serve.js: expected "run K", got "${line}"`);
    const times = [];
    for (let i = 0; i < Number(m[1]); i++) times.push(await timeRun(s));
    console.log(times.join(' '));
  }
}

main().catch((e) => { console.error(e.message); process.exit(1); });

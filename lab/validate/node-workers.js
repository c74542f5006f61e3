// SPDX-License-Identifier: MIT
// node worker threads, for lab/validate/run.sh: WORKERS workers each
// repeat ROUNDS times: build an array of 100000 small objects and 32
// ArrayBuffers of 64 KiB to 1 MiB, then drop them (V8 maps, protects and
// unmaps its heap pages; ArrayBuffer backing stores come from malloc).
//
//   node node-workers.js [WORKERS] [ROUNDS]      (default 4 40)
'use strict';
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');

function work(seed, rounds) {
  let x = seed, total = 0;
  for (let r = 0; r < rounds; r++) {
    const objs = [];
    for (let i = 0; i < 100000; i++)
      objs.push({ i, s: 'k' + i });
    const bufs = [];
    for (let i = 0; i < 32; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      const b = new ArrayBuffer((64 + (x % 961)) * 1024);
      new Uint8Array(b).fill(r & 255);
      bufs.push(b);
    }
    total += objs.length + bufs.reduce((a, b) => a + b.byteLength, 0);
  }
  return total;
}

if (isMainThread) {
  const workers = parseInt(process.argv[2] || '4', 10);
  const rounds = parseInt(process.argv[3] || '40', 10);
  const t0 = process.hrtime.bigint();
  let done = 0, sum = 0;
  for (let w = 0; w < workers; w++) {
    const wk = new Worker(__filename, { workerData: { seed: w + 1, rounds } });
    wk.on('message', (v) => {
      sum += v;
      if (++done === workers) {
        const s = Number(process.hrtime.bigint() - t0) / 1e9;
        console.log(`workers=${workers} rounds=${rounds} seconds=${s.toFixed(3)} checksum=${sum}`);
      }
    });
  }
} else {
  parentPort.postMessage(work(workerData.seed, workerData.rounds));
}

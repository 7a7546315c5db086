// peer_bench.mjs: the ONNX Runtime (onnxruntime-node) half of the side-by-side benchmark
// (bench/peer/run.sh, docs/performance.md "Versus ONNX Runtime").
//
//   NODE_PATH=/tmp/ember-peer-ort/node_modules node peer_bench.mjs \
//       --model model.onnx --inputs inputs.json --threads N --out-dir DIR --json OUT.json \
//       [--min-seconds 0.5] [--min-iters 3] [--max-seconds 8]
//
// inputs.json is the file ember-peer-side --write-inputs wrote, so both sides embed the same
// ids. One InferenceSession (intraOpNumThreads = N, interOpNumThreads = 1, sequential, all graph
// optimisations) runs every batch x length cell exactly as ember-peer-side does: 1 warm-up call
// (its output goes to OUT_DIR/peer_t{N}_b{B}_l{L}.f32 for the agreement check), then timed calls
// until at least --min-iters and --min-seconds (or --max-seconds with at least 1 call). The
// input tensors are built once per cell, outside the timed calls.

import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';

const require = createRequire(import.meta.url);
const ortPath = process.env.ORT_NODE_MODULE || 'onnxruntime-node';
let ort;
try {
  ort = require(ortPath);
} catch (e) {
  // ESM ignores NODE_PATH; resolve through it explicitly.
  const paths = (process.env.NODE_PATH || '').split(':').filter(Boolean);
  ort = require(require.resolve('onnxruntime-node', { paths }));
}

function parseArgs(argv) {
  const a = { minSeconds: 0.5, minIters: 3, maxSeconds: 8, threads: 1 };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i], v = argv[i + 1];
    if (k === '--model') a.model = v;
    else if (k === '--inputs') a.inputs = v;
    else if (k === '--threads') a.threads = Number(v);
    else if (k === '--out-dir') a.outDir = v;
    else if (k === '--json') a.json = v;
    else if (k === '--min-seconds') a.minSeconds = Number(v);
    else if (k === '--min-iters') a.minIters = Number(v);
    else if (k === '--max-seconds') a.maxSeconds = Number(v);
    else throw new Error(`unknown option ${k}`);
  }
  if (!a.model || !a.inputs || !a.outDir) throw new Error('need --model, --inputs, --out-dir');
  return a;
}

const now = () => Number(process.hrtime.bigint()) / 1e9;
const loadavg = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

const args = parseArgs(process.argv.slice(2));
const shared = JSON.parse(fs.readFileSync(args.inputs, 'utf8'));
const session = await ort.InferenceSession.create(args.model, {
  intraOpNumThreads: args.threads,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
  executionProviders: ['cpu'],
});
console.log(`peer: onnxruntime-node ${ort.env.versions?.node ?? '?'}, threads ${args.threads}, ` +
            `load average ${loadavg()}`);

const results = [];
for (const cell of shared.cells) {
  const b = cell.batch, len = cell.length;
  const ids = new BigInt64Array(b * len);
  const mask = new BigInt64Array(b * len);
  cell.ids.forEach((seq, i) => seq.forEach((id, j) => {
    ids[i * len + j] = BigInt(id);
    mask[i * len + j] = 1n;
  }));
  const feeds = {
    input_ids: new ort.Tensor('int64', ids, [b, len]),
    attention_mask: new ort.Tensor('int64', mask, [b, len]),
  };
  const w0 = now();
  const out = (await session.run(feeds)).embeddings;  // warm-up; its output is checked
  const warm = now() - w0;
  const file = `${args.outDir}/peer_t${args.threads}_b${b}_l${len}.f32`;
  fs.writeFileSync(file, Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength));
  const times = [];
  const start = now();
  for (;;) {
    const t0 = now();
    await session.run(feeds);
    const t1 = now();
    times.push(t1 - t0);
    if (times.length >= args.minIters && t1 - start >= args.minSeconds) break;
    if (t1 - start >= args.maxSeconds) break;
  }
  const mean = times.reduce((s, t) => s + t, 0) / times.length;
  const best = Math.min(...times);
  const sps = b / mean;
  console.log(`peer  t${args.threads} b${String(b).padStart(3)} l${String(len).padStart(3)}: ` +
              `${sps.toFixed(1).padStart(9)} sent/s  (mean ${(mean * 1e3).toFixed(1)} ms, ` +
              `min ${(best * 1e3).toFixed(1)} ms, ${times.length} calls, ` +
              `warm-up ${(warm * 1e3).toFixed(1)} ms)`);
  results.push({ threads: args.threads, batch: b, length: len, sentences_per_s: sps,
                 mean_s: mean, min_s: best, calls: times.length, times_s: times,
                 warmup_s: warm, output: file });
}
if (args.json) {
  fs.writeFileSync(args.json, JSON.stringify({ side: 'peer', runtime: 'onnxruntime-node',
    version: ort.env.versions?.node ?? null, threads: args.threads,
    load_average_end: loadavg(), cells: results }, null, 1) + '\n');
}

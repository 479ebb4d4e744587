// Runs an ONNX model with ONNX Runtime (onnxruntime-node) on int64 BERT inputs.
//
//   node run.js REQUEST.json > RESPONSE.json
//
// REQUEST:  {"model": "path.onnx", "batches": [{"input_ids": [[...]], "attention_mask": [[...]],
//            "token_type_ids": [[...]]}, ...]}
// RESPONSE: {"batches": [{"<output>": {"dims": [...], "data": [...]}}, ...]}
// Used by toolret's export tests (export/onnx_test.go); install with
// `npm install --ignore-scripts` in this directory (the tarball ships the CPU binaries).
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function tensor(rows) {
  const b = rows.length, s = b ? rows[0].length : 0;
  const data = new BigInt64Array(b * s);
  rows.forEach((r, i) => {
    if (r.length !== s) throw new Error(`ragged batch: row ${i} has ${r.length} values, want ${s}`);
    r.forEach((v, j) => { data[i * s + j] = BigInt(v); });
  });
  return new ort.Tensor('int64', data, [b, s]);
}

async function main() {
  const req = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const session = await ort.InferenceSession.create(req.model, { graphOptimizationLevel: 'all' });
  const out = { batches: [], inputs: session.inputNames, outputs: session.outputNames };
  for (const batch of req.batches) {
    const feeds = {};
    for (const name of session.inputNames) feeds[name] = tensor(batch[name]);
    const res = await session.run(feeds);
    const o = {};
    for (const [name, t] of Object.entries(res)) o[name] = { dims: t.dims, data: Array.from(t.data) };
    out.batches.push(o);
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });

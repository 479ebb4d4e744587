// Runs toolret's HF exports with transformers.js (@huggingface/transformers), offline, as a
// user would: pipeline("feature-extraction") with mean/CLS pooling, the sentence_embedding
// output through AutoModel, pipeline("text-classification"), and pair logits through
// AutoTokenizer + AutoModelForSequenceClassification.
//
//   node run.cjs NODE_MODULES_PARENT REQUEST.json > RESPONSE.json
//
// NODE_MODULES_PARENT is the directory whose node_modules holds @huggingface/transformers
// (scripts/install-transformersjs.sh installs it into ~/.cache/toolret/npm).
// REQUEST:  {"jobs": [{"dir": "/abs/export/dir", "task": "...", "batches": [[text, ...], ...],
//            "pairs": [[text, ...], ...], "pooling": "mean|cls", "normalize": bool,
//            "max_length": N, "top_k": N}, ...]}
//   task: feature-extraction | sentence-embedding | text-classification | pair-logits
// RESPONSE: {"version": "4.3.1", "jobs": [{"batches": [{"input_ids": [[...]],
//            "attention_mask": [[...]], "token_type_ids": [[...]], "output": ...}]}]}
//   output: [[float]] rows (embeddings or logits), or for text-classification
//   [{label: score}] per text.
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

function rows(t) {
  // A Tensor [n, k] as n arrays of numbers (BigInt ids become numbers).
  const [n, k] = t.dims;
  const out = [];
  for (let i = 0; i < n; i++) out.push(Array.from(t.data.slice(i * k, (i + 1) * k), Number));
  return out;
}

function inputs(enc) {
  const o = {};
  for (const k of ['input_ids', 'attention_mask', 'token_type_ids']) if (enc[k]) o[k] = rows(enc[k]);
  return o;
}

function setMaxLength(tok, n) {
  // transformers.js 3.x: model_max_length is a plain property; 4.x: a getter over the
  // tokenizer_config.json it read (assigning it throws), so that is what changes.
  const d = Object.getOwnPropertyDescriptor(tok, 'model_max_length');
  if (d && 'value' in d) tok.model_max_length = n;
  else tok._tokenizerConfig.model_max_length = n;
  if (tok.model_max_length !== n) throw new Error(`cannot set the tokenizer's model_max_length to ${n}`);
}

async function main() {
  const req = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
  const rq = createRequire(path.join(path.resolve(process.argv[2]), 'package.json'));
  const tf = rq('@huggingface/transformers');
  const modules = path.join(path.resolve(process.argv[2]), 'node_modules');
  const version = JSON.parse(fs.readFileSync(path.join(modules, '@huggingface', 'transformers', 'package.json'), 'utf8')).version;
  tf.env.allowRemoteModels = false;
  tf.env.allowLocalModels = true;
  const out = { version, jobs: [] };
  for (const job of req.jobs) {
    // Local models are named relative to env.localModelPath.
    tf.env.localModelPath = path.dirname(job.dir) + path.sep;
    const id = path.basename(job.dir);
    const res = { batches: [] };
    if (job.task === 'feature-extraction' || job.task === 'text-classification') {
      const pipe = await tf.pipeline(job.task, id, { dtype: 'fp32' });
      if (job.max_length) setMaxLength(pipe.tokenizer, job.max_length);
      for (const texts of job.batches) {
        // What the pipeline feeds the model (its own tokenizer call).
        const b = inputs(pipe.tokenizer(texts, { padding: true, truncation: true }));
        if (job.task === 'feature-extraction') {
          b.output = (await pipe(texts, { pooling: job.pooling, normalize: job.normalize })).tolist();
        } else {
          const r = await pipe(texts, { top_k: job.top_k });
          b.output = r.map((x) => Object.fromEntries((Array.isArray(x) ? x : [x]).map((e) => [e.label, e.score])));
        }
        res.batches.push(b);
      }
      await pipe.dispose();
    } else if (job.task === 'sentence-embedding' || job.task === 'pair-logits') {
      const tok = await tf.AutoTokenizer.from_pretrained(id);
      if (job.max_length) setMaxLength(tok, job.max_length);
      const model = job.task === 'pair-logits'
        ? await tf.AutoModelForSequenceClassification.from_pretrained(id, { dtype: 'fp32' })
        : await tf.AutoModel.from_pretrained(id, { dtype: 'fp32' });
      for (let i = 0; i < job.batches.length; i++) {
        const opts = { padding: true, truncation: true };
        if (job.pairs) opts.text_pair = job.pairs[i];
        const enc = tok(job.batches[i], opts);
        const o = await model(enc);
        const b = inputs(enc);
        b.output = rows(job.task === 'pair-logits' ? o.logits : o.sentence_embedding);
        res.batches.push(b);
      }
      await model.dispose();
    } else {
      throw new Error(`unknown task ${job.task}`);
    }
    out.jobs.push(res);
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { console.error(String((e && e.stack) || e)); process.exit(1); });

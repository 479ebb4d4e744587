// Unigram tokenizer parity fixture, part 2: HF tokenizers (Rust, through its official node
// bindings, npm "tokenizers") and @huggingface/transformers (transformers.js) on the
// tokenizer.json toolret writes for the fixture's spm.model, offline.
//
//   /usr/bin/python3 scripts/unigram/make_fixture.py      # part 1: spm.model, texts, sentencepiece ids
//   go run ./scripts/unigram/mkjson                        # tokenize/testdata/unigram/hf/tokenizer.json
//   mkdir -p /work/npm-tf && cd /work/npm-tf && npm install --ignore-scripts @huggingface/transformers@3 tokenizers@0.23
//   node scripts/unigram/hf_fixture.mjs /work/npm-tf       # from the repository root
//
// Writes tokenize/testdata/unigram/hf_ids.json: for each text the ids with [CLS]/[SEP] from
// both libraries (and pair ids with token types); tokenize/unigram_test.go compares them.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const mods = process.argv[2];
if (!mods) throw new Error('usage: node hf_fixture.mjs <dir with node_modules>');
const require = createRequire(path.join(path.resolve(mods), 'package.json'));
const here = path.dirname(new URL(import.meta.url).pathname);
const fixture = path.resolve(here, '../../tokenize/testdata/unigram');
const hfDir = path.join(fixture, 'hf');

const { Tokenizer } = require('tokenizers');
const rust = Tokenizer.fromFile(path.join(hfDir, 'tokenizer.json'));
const tf = await import(pathToFileURL(require.resolve('@huggingface/transformers')).href);
const { env, AutoTokenizer } = tf.env ? tf : tf.default;
env.allowRemoteModels = false;
env.localModelPath = fixture;
const js = await AutoTokenizer.from_pretrained('hf');

const version = (p) => JSON.parse(fs.readFileSync(path.join(path.resolve(mods), 'node_modules', p, 'package.json'), 'utf8')).version;
const { texts, pairs } = JSON.parse(fs.readFileSync(path.join(fixture, 'texts.json'), 'utf8'));

const singles = [];
for (const t of texts) {
  const r = await rust.encode(t);
  singles.push({ rust: r.getIds(), js: Array.from(js(t).input_ids.data, Number) });
}
const pairOut = [];
for (const [a, b] of pairs) {
  const r = await rust.encode(a, b);
  const j = js(a, { text_pair: b });
  pairOut.push({
    rust: r.getIds(), rust_types: r.getTypeIds(),
    js: Array.from(j.input_ids.data, Number), js_types: Array.from(j.token_type_ids.data, Number),
  });
}
const out = {
  generator: `tokenizers (Rust, node bindings) ${version('tokenizers')}; @huggingface/transformers ${version('@huggingface/transformers')}`,
  singles, pairs: pairOut,
};
fs.writeFileSync(path.join(fixture, 'hf_ids.json'), JSON.stringify(out));
const diff = singles.filter((s) => JSON.stringify(s.rust) !== JSON.stringify(s.js)).length;
console.log(`${singles.length} texts, ${pairOut.length} pairs; tokenizers and transformers.js differ on ${diff} texts`);

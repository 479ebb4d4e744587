// Tokenizer parity fixture: tokenizes >= 200 varied texts with @huggingface/transformers
// (offline, from the tokenizer.json toolret writes for bert-base-uncased's vocab) and stores
// the ids in tokenize/testdata/parity.json; tokenize/parity_test.go compares toolret's ids.
//
//   cd scripts/tokparity && npm install --ignore-scripts @huggingface/transformers@3
//   GOTOOLCHAIN=go1.27.4 go run ./scripts/tokparity/mkjson -out /tmp/tokparity   # from the repo root
//   node scripts/tokparity/make_fixture.mjs /tmp/tokparity
//
// Ids are recorded without truncation. transformers.js 3.x drops the final [SEP] when it
// truncates, unlike HF's Python tokenizers; so the Go test derives truncated expectations
// from these untruncated ids with the Python rule ([CLS] a[:n] [SEP]; pairs longest-first).
//
// Not covered: CJK ideographs outside the BMP (U+20000...). transformers.js scans UTF-16
// code units for them and never isolates them; toolret follows HF's Rust tokenizers.
import fs from 'node:fs';
import path from 'node:path';
import { env, AutoTokenizer } from '@huggingface/transformers';

const dir = process.argv[2];
env.allowRemoteModels = false;
env.localModelPath = path.dirname(dir);
const tok = await AutoTokenizer.from_pretrained(path.basename(dir));

const shared = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../../shared/datasets/toollens');
const lines = (f) => fs.readFileSync(path.join(shared, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).text);
const queries = lines('queries.jsonl');
const tools = lines('corpus.jsonl');
const pick = (arr, n, seed) => { const out = []; let x = seed; for (let i = 0; i < n; i++) { x = (x * 1103515245 + 12345) % 2147483648; out.push(arr[x % arr.length]); } return out; };

const hand = [
  '', ' ', '\t\n', 'Hello, World!', 'Café déjà vu — naïve façade', 'Crème brûlée à la Zürich', 'ÅNGSTRÖM São Paulo',
  '東京の天気を教えて', '北京烤鸭 recipe', '한국어 번역 please', 'Привет, как дела?', 'مرحبا بالعالم', 'Ελληνικά γράμματα',
  'I ❤️ emoji 🚀🔥 tests 👩‍💻', 'smile :-) ;) <3', 'https://example.com/api/v1/weather?city=Lisbon&units=metric',
  'email me at jane.doe@example.com', 'C++ & C# vs. Go (1.27)', '$100.50 + 20% = ?', 'price: €1,299.99 / £999',
  'supercalifragilisticexpialidocious', 'a'.repeat(99), 'b'.repeat(100), 'c'.repeat(101), 'x'.repeat(150) + ' end',
  'pneumonoultramicroscopicsilicovolcanoconiosis is long', 'don\'t won\'t can\'t', 'tab\tseparated\tvalues', 'null\u0000char',
  'zero\u200bwidth space', 'soft\u00adhyphen', 'non\u00a0breaking space', 'ﬁ ligature ﬂ', 'Ⅻ roman numeral', '２０２４年 full-width',
  'İstanbul ıi', 'ΟΔΟΣ ΟΔΟΣ. ΣΑΣ Σ', 'a\u0378b', 'x\u{E000}y', 'ǅ ǈ', '\u1680a\u3000b', 'straße STRASSE', 'ß ẞ', 'naïve cafe\u0301', 'Ωmega ω', '∑ math ∫ symbols ≤ ≥', '"quoted" \'single\' «guillemets»',
  '[CLS] [SEP] [MASK] literal', '##prefix tokens', 'snake_case and kebab-case', 'CamelCaseWord', 'UPPER lower MiXeD',
  '123456789 3.14159 1e-9', '...!!!???', '@#$%^&*()_+{}|:<>?', 'new\nline', 'carriage\r\nreturn',
];
const singles = [...hand, ...pick(queries, 90, 7), ...pick(tools, 40, 11)];
const pairs = [
  ...pick(queries, 30, 13).map((q, i) => [q, pick(tools, 30, 17)[i]]),
  ['short', 'also short'], ['', 'only second'], ['only first', ''], ['Café', '東京'],
];
const ids = (a, b) => Array.from(tok(a, b === undefined ? {} : { text_pair: b }).input_ids.data, Number);
const out = {
  generator: '@huggingface/transformers ' + JSON.parse(fs.readFileSync(path.join(path.dirname(new URL(import.meta.url).pathname), 'node_modules/@huggingface/transformers/package.json'), 'utf8')).version,
  singles: singles.map((t) => ({ text: t, ids: ids(t) })),
  pairs: pairs.map(([a, b]) => ({ a, b, ids: ids(a, b), types: Array.from(tok(a, { text_pair: b }).token_type_ids.data, Number) })),
};
const dst = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../tokenize/testdata/parity.json');
fs.writeFileSync(dst, JSON.stringify(out));
console.log(`wrote ${out.singles.length} singles and ${out.pairs.length} pairs to ${dst}`);

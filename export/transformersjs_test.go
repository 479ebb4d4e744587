package export_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
)

// tjsTol bounds the max abs difference between transformers.js and toolret on exported
// models (README, "Export").
const tjsTol = 1e-5

// transformersJS returns the directory whose node_modules holds transformers.js:
// $TOOLRET_TRANSFORMERS_JS when set, else the cache scripts/install-transformersjs.sh fills
// (run here when node and npm are present; it returns at once when the pinned version is
// installed). It skips the test without node, npm or registry access.
func transformersJS(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found: the transformers.js test needs node and npm")
	}
	if d := os.Getenv("TOOLRET_TRANSFORMERS_JS"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "node_modules", "@huggingface", "transformers", "package.json")); err != nil {
			t.Fatalf("TOOLRET_TRANSFORMERS_JS=%s: no node_modules/@huggingface/transformers there", d)
		}
		return d
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not found: the transformers.js test needs node and npm")
	}
	cmd := exec.Command("bash", "../scripts/install-transformersjs.sh")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("scripts/install-transformersjs.sh failed (no registry access?): %v\n%s", err, stderr.String())
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		t.Fatal("scripts/install-transformersjs.sh printed no directory")
	}
	return lines[len(lines)-1]
}

// tjsJob is one request to scripts/transformersjs/run.cjs.
type tjsJob struct {
	Dir       string     `json:"dir"`
	Task      string     `json:"task"` // feature-extraction, sentence-embedding, text-classification, pair-logits
	Batches   [][]string `json:"batches"`
	Pairs     [][]string `json:"pairs,omitempty"`
	Pooling   string     `json:"pooling,omitempty"`
	Normalize bool       `json:"normalize,omitempty"`
	MaxLength int        `json:"max_length,omitempty"` // overrides the tokenizer's model_max_length
	TopK      int        `json:"top_k,omitempty"`
}

// tjsBatch is what transformers.js fed the model for one batch and what it returned.
type tjsBatch struct {
	InputIDs      [][]int32       `json:"input_ids"`
	AttentionMask [][]int32       `json:"attention_mask"`
	TokenTypeIDs  [][]int32       `json:"token_type_ids"`
	Output        json.RawMessage `json:"output"`
}

// runTJS runs jobs in one node process.
func runTJS(t *testing.T, modules string, jobs []tjsJob) [][]tjsBatch {
	t.Helper()
	req, err := json.Marshal(map[string]any{"jobs": jobs})
	if err != nil {
		t.Fatal(err)
	}
	rp := filepath.Join(t.TempDir(), "request.json")
	if err := os.WriteFile(rp, req, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "../scripts/transformersjs/run.cjs", modules, rp)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("transformers.js: %v\n%s", err, stderr.String())
	}
	var res struct {
		Version string `json:"version"`
		Jobs    []struct {
			Batches []tjsBatch `json:"batches"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("transformers.js output: %v", err)
	}
	if len(res.Jobs) != len(jobs) {
		t.Fatalf("transformers.js answered %d of %d jobs", len(res.Jobs), len(jobs))
	}
	t.Logf("transformers.js %s", res.Version)
	var bs [][]tjsBatch
	for i, j := range res.Jobs {
		if len(j.Batches) != len(jobs[i].Batches) {
			t.Fatalf("job %d: %d batches, want %d", i, len(j.Batches), len(jobs[i].Batches))
		}
		bs = append(bs, j.Batches)
	}
	return bs
}

// tjsRow is one text (or pair) as transformers.js saw it: its unpadded ids and types and
// its output row.
type tjsRow struct {
	ids, types []int32
	out        []float64
	labels     map[string]float64 // text-classification
}

// tjsRows flattens the batches of a job.
func tjsRows(t *testing.T, task string, bs []tjsBatch) []tjsRow {
	t.Helper()
	var rows []tjsRow
	for bi, b := range bs {
		if len(b.InputIDs) != len(b.AttentionMask) {
			t.Fatalf("batch %d: %d id rows, %d mask rows", bi, len(b.InputIDs), len(b.AttentionMask))
		}
		var outs [][]float64
		var labels []map[string]float64
		if task == "text-classification" {
			if err := json.Unmarshal(b.Output, &labels); err != nil {
				t.Fatalf("batch %d: %v", bi, err)
			}
		} else if err := json.Unmarshal(b.Output, &outs); err != nil {
			t.Fatalf("batch %d: %v", bi, err)
		}
		if max(len(outs), len(labels)) != len(b.InputIDs) {
			t.Fatalf("batch %d: %d outputs for %d rows", bi, max(len(outs), len(labels)), len(b.InputIDs))
		}
		for i, ids := range b.InputIDs {
			n := 0
			for _, v := range b.AttentionMask[i] {
				n += int(v)
			}
			r := tjsRow{ids: ids[:n], types: make([]int32, n)}
			if b.TokenTypeIDs != nil {
				r.types = b.TokenTypeIDs[i][:n]
			}
			if outs != nil {
				r.out = outs[i]
			} else {
				r.labels = labels[i]
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// tjsCheck compares transformers.js rows with toolret. want are toolret's outputs through its
// own API (tokenizing with ids; rows whose transformers.js ids differ are skipped there), ref
// computes toolret's outputs for the ids transformers.js used. A row whose ids differ from
// toolret's must be transformers.js's truncation — the untruncated ids (full) cut at the
// model length, final [SEP] lost — and nothing else. It returns the max differences against
// want and ref.
func tjsCheck(t *testing.T, rows []tjsRow, ids, full [][]int32, maxLen int, want [][]float64, ref func(ids, types [][]int32) [][]float64) (dWant, dRef float64) {
	t.Helper()
	if len(rows) != len(ids) {
		t.Fatalf("%d rows from transformers.js, %d texts", len(rows), len(ids))
	}
	var jsIDs, jsTypes [][]int32
	cut := 0
	for i, r := range rows {
		jsIDs, jsTypes = append(jsIDs, r.ids), append(jsTypes, r.types)
		got := r.out
		if !slices.Equal(r.ids, ids[i]) {
			if len(full[i]) <= maxLen || !slices.Equal(r.ids, full[i][:maxLen]) {
				t.Fatalf("row %d: transformers.js ids %v, toolret %v (untruncated %v)", i, r.ids, ids[i], full[i])
			}
			cut++
			continue
		}
		if len(got) != len(want[i]) {
			t.Fatalf("row %d: %d values, want %d", i, len(got), len(want[i]))
		}
		for k := range got {
			dWant = max(dWant, math.Abs(got[k]-want[i][k]))
		}
	}
	if cut == len(rows) {
		t.Fatal("every text was truncated differently: nothing compared with toolret's own embeddings")
	}
	refs := ref(jsIDs, jsTypes)
	for i, r := range rows {
		for k := range r.out {
			dRef = max(dRef, math.Abs(r.out[k]-refs[i][k]))
		}
	}
	t.Logf("%d rows (%d truncated by transformers.js): max abs diff %.3g vs toolret, %.3g vs toolret on transformers.js's ids", len(rows), cut, dWant, dRef)
	if dWant > tjsTol || dRef > tjsTol {
		t.Errorf("transformers.js differs from toolret by %.3g (own tokenization) / %.3g (same ids), > %g", dWant, dRef, tjsTol)
	}
	return dWant, dRef
}

func f64(rows [][]float32) [][]float64 {
	out := make([][]float64, len(rows))
	for i, r := range rows {
		out[i] = make([]float64, len(r))
		for k, v := range r {
			out[i][k] = float64(v)
		}
	}
	return out
}

// pooledRef returns toolret's pooled states of tower t of m (pooling p, normalised with
// norm) for the given unpadded sequences.
func pooledRef(t *testing.T, m *export.Model, tw *export.Tower, p encoder.Pooling, norm bool, ids, types [][]int32) [][]float32 {
	t.Helper()
	r, err := encoder.NewRunner(m.Backend, m.Store, tw.Base, tw.Encoder, p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := encoder.Map(m.Tok, ids, types, 0, 32, r.Call)
	if err != nil {
		t.Fatal(err)
	}
	if norm {
		for _, v := range out {
			export.L2Normalize(v)
		}
	}
	return out
}

// probabilities turns logits into what a text-classification pipeline reports: the sigmoid of
// each logit for one label or sigmoid heads, else the softmax.
func probabilities(logits []float32, sigmoid bool) []float64 {
	out := make([]float64, len(logits))
	if sigmoid || len(logits) == 1 {
		for i, v := range logits {
			out[i] = 1 / (1 + math.Exp(-float64(v)))
		}
		return out
	}
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = max(mx, float64(v))
	}
	s := 0.0
	for i, v := range logits {
		out[i] = math.Exp(float64(v) - mx)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

// split cuts texts into two batches of different sizes (padded differently by transformers.js).
func split(texts []string) [][]string { return [][]string{texts[:17], texts[17:]} }

// TestTransformersJS loads HF exports with transformers.js (@huggingface/transformers,
// offline) as its users would, on 50 ToolLens queries (the embedded dataset's texts without
// ../shared) plus an empty and a non-ASCII text, in two batches: pipeline("feature-extraction",
// DIR, {dtype: "fp32"}) with mean and CLS pooling for bi-encoders (shared and separate towers,
// tool and query lengths), the sentence_embedding output through AutoModel (a pooler
// bi-encoder, which no pipeline pooling covers), pipeline("text-classification") for a
// one-logit cross-encoder (sigmoid score) and softmax and sigmoid classifiers, and pair logits
// through AutoTokenizer + AutoModelForSequenceClassification. Every output must equal
// toolret's within tjsTol; transformers.js truncates a text longer than the model length by
// cutting its end ([SEP] included) where toolret keeps the final [SEP], so those rows are
// compared with toolret run on transformers.js's ids.
func TestTransformersJS(t *testing.T) {
	modules := transformersJS(t)
	be := goBackend(t)
	texts := sampleTexts(t, 50)
	root := t.TempDir()

	type check struct {
		name  string
		job   tjsJob
		match func(t *testing.T, rows []tjsRow)
	}
	var checks []check

	// Bi-encoders.
	embedCheck := func(m *export.Model, tower string, maxLen int, p encoder.Pooling) func(t *testing.T, rows []tjsRow) {
		return func(t *testing.T, rows []tjsRow) {
			tw, err := m.Tower(tower)
			if err != nil {
				t.Fatal(err)
			}
			want, err := m.Embed(tower, texts)
			if err != nil {
				t.Fatal(err)
			}
			ids, full := make([][]int32, len(texts)), make([][]int32, len(texts))
			for i, s := range texts {
				ids[i], full[i] = m.Tok.Single(s, maxLen), m.Tok.Single(s, 0)
			}
			tjsCheck(t, rows, ids, full, maxLen, f64(want), func(ids, types [][]int32) [][]float64 {
				return f64(pooledRef(t, m, tw, p, tw.Normalize, ids, types))
			})
		}
	}
	for _, tc := range []struct {
		name string
		o    exporttest.Options
	}{
		{"mean-cosine", exporttest.Options{}},
		{"cls-dot-separate", exporttest.Options{Pooling: encoder.PoolCLS, Similarity: "dot", Separate: true, Act: "relu"}},
		{"pooler-cosine-gelunew", exporttest.Options{Pooling: encoder.PoolPooler, Act: "gelu_new"}},
	} {
		m, err := exporttest.BiEncoder(tc.o, be, 21)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(root, tc.name)
		man, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out})
		if err != nil {
			t.Fatal(err)
		}
		for _, tower := range []string{biencoder.ToolTower, biencoder.QueryTower} {
			dir, err := man.TowerDir(out, tower)
			if err != nil {
				t.Fatal(err)
			}
			maxLen := map[string]int{biencoder.QueryTower: 32, biencoder.ToolTower: 64}[tower]
			override := 0
			if !tc.o.Separate && tower == biencoder.QueryTower {
				// A shared tower's tokenizer has the tool length; queries set the query length.
				override = maxLen
			}
			job := tjsJob{Dir: dir, Task: "feature-extraction", Batches: split(texts), Pooling: string(tc.o.Pooling), Normalize: tc.o.Similarity != "dot", MaxLength: override}
			if tc.o.Pooling == "" {
				job.Pooling = "mean"
			}
			if tc.o.Pooling == encoder.PoolPooler {
				job.Task, job.Pooling, job.Normalize = "sentence-embedding", "", false
			}
			p := tc.o.Pooling
			if p == "" {
				p = encoder.PoolMean
			}
			name := fmt.Sprintf("%s/%s-tower/%s", tc.name, tower, job.Task)
			checks = append(checks, check{name, job, embedCheck(m, tower, maxLen, p)})
			if tc.name == "mean-cosine" && tower == biencoder.ToolTower {
				// The graph's own pooled output, through AutoModel.
				checks = append(checks, check{tc.name + "/tool-tower/sentence-embedding", tjsJob{Dir: dir, Task: "sentence-embedding", Batches: split(texts)}, embedCheck(m, tower, maxLen, p)})
			}
		}
	}

	// Heads: a one-logit cross-encoder over [CLS], a softmax classifier over the pooler, a
	// sigmoid (multi-label) classifier over [CLS].
	docs := make([]string, len(texts))
	for i := range docs {
		docs[i] = texts[(i*7+3)%len(texts)]
	}
	for _, tc := range []struct {
		labels []string
		pool   encoder.Pooling
		act    string
	}{{[]string{"relevant"}, encoder.PoolCLS, "sigmoid"}, {[]string{"a", "b", "c"}, encoder.PoolPooler, "softmax"}, {[]string{"x", "y"}, encoder.PoolCLS, "sigmoid"}} {
		m := headModel(t, be, tc.labels, tc.pool, tc.act)
		m.Towers[0].MaxLen = 64 // short enough that some texts and pairs are truncated
		out := filepath.Join(root, fmt.Sprintf("head-%d-%s", len(tc.labels), tc.pool))
		if _, err := export.Export(m, export.Options{Format: export.FormatHF, Out: out}); err != nil {
			t.Fatal(err)
		}
		maxLen := m.Towers[0].MaxLen
		headRef := func(ids, types [][]int32) [][]float32 {
			return m.Head.Logits(pooledRef(t, m, &m.Towers[0], tc.pool, false, ids, types))
		}
		sigmoid := tc.act == "sigmoid"
		checks = append(checks, check{filepath.Base(out) + "/text-classification", tjsJob{Dir: out, Task: "text-classification", Batches: split(texts), TopK: len(tc.labels)}, func(t *testing.T, rows []tjsRow) {
			logits, err := m.Score(texts, nil)
			if err != nil {
				t.Fatal(err)
			}
			ids, full := make([][]int32, len(texts)), make([][]int32, len(texts))
			want := make([][]float64, len(texts))
			for i, s := range texts {
				ids[i], full[i] = m.Tok.Single(s, maxLen), m.Tok.Single(s, 0)
				want[i] = probabilities(logits[i], sigmoid)
			}
			for i := range rows {
				if len(rows[i].labels) != len(tc.labels) {
					t.Fatalf("row %d: labels %v, want %v", i, rows[i].labels, tc.labels)
				}
				rows[i].out = make([]float64, len(tc.labels))
				for k, l := range tc.labels {
					v, ok := rows[i].labels[l]
					if !ok {
						t.Fatalf("row %d: no label %q in %v", i, l, rows[i].labels)
					}
					rows[i].out[k] = v
				}
			}
			tjsCheck(t, rows, ids, full, maxLen, want, func(ids, types [][]int32) [][]float64 {
				lg := headRef(ids, types)
				out := make([][]float64, len(lg))
				for i := range lg {
					out[i] = probabilities(lg[i], sigmoid)
				}
				return out
			})
		}})
		if len(tc.labels) == 1 {
			checks = append(checks, check{filepath.Base(out) + "/pair-logits", tjsJob{Dir: out, Task: "pair-logits", Batches: split(texts), Pairs: split(docs)}, func(t *testing.T, rows []tjsRow) {
				logits, err := m.Score(texts, docs)
				if err != nil {
					t.Fatal(err)
				}
				ids, full := make([][]int32, len(texts)), make([][]int32, len(texts))
				want := f64(logits)
				for i := range texts {
					ids[i], _ = m.Tok.Pair(texts[i], docs[i], maxLen)
					full[i], _ = m.Tok.Pair(texts[i], docs[i], 0)
					// transformers.js 4 encodes an empty second text as no pair: [CLS] a [SEP],
					// where HF's tokenizers (and toolret) give [CLS] a [SEP] [SEP]. Such a row
					// is compared with toolret on transformers.js's ids.
					if docs[i] == "" && i < len(rows) && !slices.Equal(rows[i].ids, ids[i]) && slices.Equal(rows[i].ids, m.Tok.Single(texts[i], maxLen)) {
						t.Logf("row %d: empty second text encoded as a single text (transformers.js 4)", i)
						ids[i], full[i] = rows[i].ids, rows[i].ids
						want[i] = f64(headRef([][]int32{rows[i].ids}, [][]int32{rows[i].types}))[0]
					}
				}
				tjsCheck(t, rows, ids, full, maxLen, want, func(ids, types [][]int32) [][]float64 { return f64(headRef(ids, types)) })
			}})
		}
	}

	jobs := make([]tjsJob, len(checks))
	for i, c := range checks {
		jobs[i] = c.job
	}
	res := runTJS(t, modules, jobs)
	for i, c := range checks {
		t.Run(c.name, func(t *testing.T) { c.match(t, tjsRows(t, c.job.Task, res[i])) })
	}
}

package pretrain

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// testSpecials: ids 0-4 are [PAD] [UNK] [CLS] [SEP] [MASK], as a built vocabulary has them.
func testSpecials(vocab int) Specials {
	return Specials{Mask: 4, Vocab: vocab, ids: map[int32]bool{0: true, 1: true, 2: true, 3: true, 4: true}}
}

// TestMask masks many random sequences ([CLS] tokens [SEP], some [UNK] inside, [PAD] after)
// and checks BERT's rates: the predicted fraction of the maskable tokens, 80/10/10
// [MASK]/random/kept among them, never a special or padding position, never a special random
// replacement, labels the original ids, other positions unchanged; and determinism per seed.
func TestMask(t *testing.T) {
	const vocab = 200
	sp := testSpecials(vocab)
	for _, tc := range []struct {
		rate float64
		seed uint64
	}{{0.15, 1}, {0.15, 2}, {0.3, 3}} {
		r := rand.New(rand.NewPCG(tc.seed, 0))
		gen := rand.New(rand.NewPCG(99, tc.seed))
		var maskable, predicted, asMask, asRandom, kept float64
		wantPredicted := 0
		for range 4000 {
			n := 1 + gen.IntN(40)
			seq := []int32{2}
			c := 0
			for range n {
				id := int32(5 + gen.IntN(vocab-5))
				if gen.IntN(20) == 0 {
					id = 1 // [UNK]
				} else {
					c++
				}
				seq = append(seq, id)
			}
			seq = append(seq, 3)
			for range gen.IntN(5) {
				seq = append(seq, 0)
			}
			orig := slices.Clone(seq)
			m := Mask(r, seq, tc.rate, sp)
			if !slices.Equal(seq, orig) {
				t.Fatal("Mask modified its input")
			}
			if c > 0 {
				wantPredicted += max(1, int(tc.rate*float64(c)+0.5))
			}
			maskable += float64(c)
			predicted += float64(len(m.Positions))
			if len(m.Positions) > MaxPredictions(len(seq), tc.rate) {
				t.Fatalf("%d predictions in %d tokens: more than MaxPredictions %d", len(m.Positions), len(seq), MaxPredictions(len(seq), tc.rate))
			}
			isPos := map[int]bool{}
			for k, p := range m.Positions {
				isPos[p] = true
				if sp.Is(orig[p]) {
					t.Fatalf("position %d holding special token %d predicted", p, orig[p])
				}
				if m.Labels[k] != orig[p] {
					t.Fatalf("label %d at %d, original %d", m.Labels[k], p, orig[p])
				}
				switch id := m.IDs[p]; {
				case id == sp.Mask:
					asMask++
				case id == orig[p]:
					kept++
				case sp.Is(id):
					t.Fatalf("random replacement %d is special", id)
				default:
					asRandom++
				}
			}
			for p := range seq {
				if !isPos[p] && m.IDs[p] != orig[p] {
					t.Fatalf("unpredicted position %d changed %d -> %d", p, orig[p], m.IDs[p])
				}
			}
		}
		if int(predicted) != wantPredicted {
			t.Errorf("rate %v: %v predicted, want %d", tc.rate, predicted, wantPredicted)
		}
		if f := predicted / maskable; math.Abs(f-tc.rate) > 0.02 {
			t.Errorf("rate %v: predicted fraction %.4f", tc.rate, f)
		}
		// Random replacements equal to the original token count as kept: 10% + 10%/195.
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"[MASK]", asMask / predicted, 0.8}, {"random", asRandom / predicted, 0.1 * (1 - 1.0/195)}, {"kept", kept / predicted, 0.1 + 0.1/195}} {
			if math.Abs(c.got-c.want) > 0.015 {
				t.Errorf("rate %v: %s fraction %.4f, want %.4f", tc.rate, c.name, c.got, c.want)
			}
		}
	}
	seq := []int32{2, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 3}
	a := Mask(rand.New(rand.NewPCG(7, 0)), seq, 0.3, sp)
	b := Mask(rand.New(rand.NewPCG(7, 0)), seq, 0.3, sp)
	c := Mask(rand.New(rand.NewPCG(8, 0)), seq, 0.3, sp)
	if !slices.Equal(a.IDs, b.IDs) || !slices.Equal(a.Positions, b.Positions) {
		t.Error("same seed, different masks")
	}
	if slices.Equal(a.Positions, c.Positions) && slices.Equal(a.IDs, c.IDs) {
		t.Error("different seeds, same mask")
	}
	if m := Mask(r0(), []int32{2, 3, 0, 0}, 0.15, sp); len(m.Positions) != 0 {
		t.Errorf("a text of specials only: predicted %v", m.Positions)
	}
	if m := Mask(r0(), []int32{2, 9, 3}, 0.15, sp); !slices.Equal(m.Positions, []int{1}) {
		t.Errorf("one maskable token: predicted %v, want [1]", m.Positions)
	}
}

func r0() *rand.Rand { return rand.New(rand.NewPCG(0, 0)) }

// TestCrop checks Contriever crops: span lengths within the fractions (at least MinCrop or the
// whole of a shorter text, at most the limit), contiguous spans without deletion, ordered
// subsequences with the deletion rate, and determinism.
func TestCrop(t *testing.T) {
	toks := make([]int32, 100)
	for i := range toks {
		toks[i] = int32(10 + i)
	}
	for _, tc := range []struct {
		name           string
		n              int
		lo, hi, del    float64
		limit          int
		minLen, maxLen int
	}{
		{"contriever", 100, 0.1, 0.5, 0, 1000, 10, 50},
		{"limit", 100, 0.1, 0.5, 0, 20, 10, 20},
		{"at least MinCrop", 20, 0.1, 0.1, 0, 1000, MinCrop, MinCrop},
		{"short text whole", 3, 0.1, 0.5, 0, 1000, 3, 3},
		{"fixed half", 40, 0.5, 0.5, 0, 1000, 20, 20},
		{"deletion", 100, 0.5, 0.5, 0.3, 1000, 1, 50},
	} {
		r := rand.New(rand.NewPCG(5, 5))
		var kept, spans float64
		seenLen := map[int]bool{}
		for range 2000 {
			c := Crop(r, toks[:tc.n], tc.lo, tc.hi, tc.del, tc.limit)
			if len(c) < tc.minLen || len(c) > tc.maxLen {
				t.Fatalf("%s: crop of %d tokens, want [%d, %d]", tc.name, len(c), tc.minLen, tc.maxLen)
			}
			seenLen[len(c)] = true
			for k := 1; k < len(c); k++ {
				if tc.del == 0 && c[k] != c[k-1]+1 || c[k] <= c[k-1] {
					t.Fatalf("%s: crop %v is not a span (in order) of the text", tc.name, c)
				}
			}
			if c[0] < toks[0] || c[len(c)-1] >= toks[0]+int32(tc.n) {
				t.Fatalf("%s: crop %v outside the text", tc.name, c)
			}
			kept += float64(len(c))
			spans += 50
		}
		if tc.del > 0 {
			if f := 1 - kept/spans; math.Abs(f-tc.del) > 0.02 {
				t.Errorf("%s: deleted fraction %.3f, want %.2f", tc.name, f, tc.del)
			}
		} else if tc.minLen < tc.maxLen && len(seenLen) < 5 {
			t.Errorf("%s: only %d crop lengths drawn", tc.name, len(seenLen))
		}
	}
	if c := Crop(r0(), nil, 0.1, 0.5, 0.1, 10); c != nil {
		t.Errorf("crop of nothing: %v", c)
	}
	a := Crop(rand.New(rand.NewPCG(3, 1)), toks, 0.1, 0.5, 0.1, 64)
	b := Crop(rand.New(rand.NewPCG(3, 1)), toks, 0.1, 0.5, 0.1, 64)
	if !slices.Equal(a, b) {
		t.Error("same seed, different crops")
	}
}

// TestCorpus: the corpus holds every tool (held-out ones on a held-out-tool view) and the
// given queries' texts, never a test or dev query's; fields are the tools' names and
// descriptions.
func TestCorpus(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.HoldoutTools(0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		d    *data.Dataset
	}{{"own splits", d}, {"held-out tools", h}} {
		_, tr, dev, err := rundir.Carve(tc.d, "train", 0.1, 1)
		if err != nil {
			t.Fatal(err)
		}
		texts, tools, qs := Corpus(tc.d, tr.Queries)
		if tools != len(tc.d.Tools) || len(texts) != tools+qs || qs < len(tr.Queries)*9/10 || qs > len(tr.Queries) {
			t.Errorf("%s: %d texts, %d tools (dataset %d), %d queries (split %d)", tc.name, len(texts), tools, len(tc.d.Tools), qs, len(tr.Queries))
		}
		in := map[string]bool{}
		for _, x := range texts {
			in[x.Text] = true
		}
		trainText := map[string]bool{}
		for _, q := range tr.Queries {
			trainText[tc.d.Queries[q].Text] = true
		}
		test, err := tc.d.Split("test")
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range append(slices.Clone(dev.Queries), test.Queries...) {
			if s := tc.d.Queries[q].Text; in[s] && !trainText[s] {
				t.Fatalf("%s: held-out query %q in the corpus", tc.name, tc.d.Queries[q].ID)
			}
		}
		for _, tool := range tc.d.HeldOut {
			if !in[tc.d.Tools[tool].Text] {
				t.Errorf("%s: held-out tool %s not in the corpus", tc.name, tc.d.Tools[tool].ID)
			}
		}
		if dt := QueryTexts(tc.d, dev.Queries); len(dt) < len(dev.Queries)*9/10 {
			t.Errorf("%s: %d dev texts of %d dev queries", tc.name, len(dt), len(dev.Queries))
		}
	}
	name, desc := Fields(d.Tools[0])
	if name != "SkyCast Weather Current Conditions" || !strings.HasPrefix(desc, "Current temperature, humidity") || strings.Contains(desc, "required_params") {
		t.Errorf("fields of tool 0: %q / %q", name, desc)
	}
	for _, tc := range []struct {
		tool       data.Tool
		name, desc string
	}{
		{data.Tool{Title: "Weather", Text: "current weather"}, "Weather", "current weather"},
		{data.Tool{Text: "tool_name:X, api_name:Y"}, "", ""},
		{data.Tool{Text: "plain text"}, "", ""},
		{data.Tool{Text: "category_name:C, tool_name:T, api_name:A, api_description:does a thing., required_params: []"}, "T A", "does a thing."},
	} {
		if n, ds := Fields(tc.tool); n != tc.name || ds != tc.desc {
			t.Errorf("Fields(%q): %q / %q, want %q / %q", tc.tool.Text, n, ds, tc.name, tc.desc)
		}
	}
}

// TestConfig checks validation and the stored form.
func TestConfig(t *testing.T) {
	bc, err := encoder.New("bert", encoder.Sizes{Vocab: 50, Layers: 1, Hidden: 16, Heads: 2, Intermediate: 32, MaxPositions: 32})
	if err != nil {
		t.Fatal(err)
	}
	good := func() *Config {
		return &Config{Encoder: bc, MaxLen: 32, MLM: true, Contrastive: true, ContrastiveWeight: 1, MaskRate: 0.15, Temperature: 0.05,
			CropMin: 0.1, CropMax: 0.5, CropDelete: 0.1, Views: ViewsBoth, Pooling: encoder.PoolMean}
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"ok", func(*Config) {}, ""},
		{"mlm only ignores crops", func(c *Config) { c.Contrastive, c.CropMin = false, 0 }, ""},
		{"no objective", func(c *Config) { c.MLM, c.Contrastive = false, false }, "no objective"},
		{"max len", func(c *Config) { c.MaxLen = 33 }, "max length 33"},
		{"mask rate", func(c *Config) { c.MaskRate = 1 }, "mask rate 1"},
		{"temperature", func(c *Config) { c.Temperature = 0 }, "temperature 0"},
		{"weight", func(c *Config) { c.ContrastiveWeight = -1 }, "contrastive weight -1"},
		{"crops", func(c *Config) { c.CropMin, c.CropMax = 0.6, 0.5 }, "crop fractions"},
		{"deletion", func(c *Config) { c.CropDelete = 1 }, "crop deletion 1"},
		{"views", func(c *Config) { c.Views = "pairs" }, `views "pairs"`},
		{"pooling", func(c *Config) { c.Pooling = encoder.PoolCLS }, `pooling "cls"`},
	} {
		c := good()
		tc.edit(c)
		err := c.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	c, err := Unmarshal(good().Marshal())
	if err != nil || c.Encoder.Hidden() != 16 || c.Views != ViewsBoth || !c.MLM || !c.Contrastive {
		t.Fatalf("round trip: %+v, %v", c, err)
	}
	if err := c.BiEncoder().Validate(); err != nil || !c.BiEncoder().Shared || c.BiEncoder().Pooling != encoder.PoolMean {
		t.Errorf("BiEncoder: %+v, %v", c.BiEncoder(), err)
	}
	for _, tc := range []struct {
		in       string
		mlm, con bool
		err      bool
	}{{"mlm,contrastive", true, true, false}, {"mlm", true, false, false}, {" contrastive ", false, true, false}, {"mlm,simcse", false, false, true}, {"", false, false, true}} {
		m, con, err := ParseObjectives(tc.in)
		if m != tc.mlm || con != tc.con || (err != nil) != tc.err {
			t.Errorf("ParseObjectives(%q) = %v, %v, %v", tc.in, m, con, err)
		}
	}
}

// tinyTask is a pre-training task over the embedded dataset: a 1-layer BERT of hidden 32, a
// vocabulary built from the corpus, the first n corpus texts (0: all).
func tinyTask(t *testing.T, n, batch int, edit func(*Config)) *Task {
	t.Helper()
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	_, tr, dev, err := rundir.Carve(d, "train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	texts, _, _ := Corpus(d, tr.Queries)
	var all []string
	for _, x := range texts {
		all = append(all, x.Text)
	}
	vocab, err := tokenize.BuildVocab(all, 600, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := encoder.New("bert", encoder.Sizes{Vocab: tok.VocabSize(), Layers: 1, Hidden: 32, Heads: 2, Intermediate: 64, MaxPositions: 32})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Encoder: bc, MaxLen: 32, MLM: true, Contrastive: true, ContrastiveWeight: 1, MaskRate: 0.15, Temperature: 0.05,
		CropMin: 0.1, CropMax: 0.5, CropDelete: 0.1, Views: ViewsBoth, Pooling: encoder.PoolMean}
	if edit != nil {
		edit(cfg)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		// Tools first in the corpus: interleave so that a small corpus mixes both.
		rand.New(rand.NewPCG(1, 1)).Shuffle(len(texts), func(i, j int) { texts[i], texts[j] = texts[j], texts[i] })
		texts = texts[:n]
	}
	devTexts := QueryTexts(d, dev.Queries)
	task := &Task{Cfg: cfg, Tok: tok, Backend: be, Train: texts, Dev: devTexts[:min(len(devTexts), 64)], BatchSize: batch, Seed: 1}
	if err := task.Prepare(); err != nil {
		t.Fatal(err)
	}
	return task
}

// TestBatch checks a batch's inputs: shapes, the predicted positions inside the real tokens,
// the views, and that a batch is a pure function of (seed, epoch, index).
func TestBatch(t *testing.T) {
	task := tinyTask(t, 200, 16, nil)
	in, n, err := task.Batch(1, 3)
	if err != nil || n != 16 || len(in) != 9 {
		t.Fatalf("batch: %d inputs, %d examples, %v", len(in), n, err)
	}
	l := in[0].Shape().Dimensions[1]
	m := MaxPredictions(l, 0.15)
	if in[2].Shape().Dimensions[0] != 16*m || in[5].Shape().Dimensions[1] > l {
		t.Errorf("shapes: ids %s, positions %s, views %s", in[0].Shape(), in[2].Shape(), in[5].Shape())
	}
	again, _, _ := task.Batch(1, 3)
	other, _, _ := task.Batch(2, 3)
	same := func(a, b []byte) bool { return bytes.Equal(a, b) }
	for k := range in {
		if !same(raw(in[k]), raw(again[k])) {
			t.Errorf("input %d differs between two calls of the same batch", k)
		}
	}
	if same(raw(in[0]), raw(other[0])) {
		t.Error("epochs 1 and 2 give the same batch 3")
	}
	ids, _ := tensorsInt32(in[0])
	mask, _ := tensorsInt32(in[1])
	pos, _ := tensorsInt32(in[2])
	w, _ := tensorsFloat32(in[4])
	for k, p := range pos {
		if w[k] == 0 {
			continue
		}
		if mask[p] != 1 || int(p)%l == 0 {
			t.Fatalf("predicted flat position %d: mask %d (row position %d)", p, mask[p], int(p)%l)
		}
		if id := ids[p]; id != task.Tok.MaskID() && task.sp.Is(id) {
			t.Fatalf("predicted position %d holds special %d", p, id)
		}
	}
	if _, _, err := task.Batch(0, task.Batches(0)); err == nil {
		t.Error("batch out of range: no error")
	}
}

// TestEvaluateSeesViews: identical views are found (contrastive_acc 100) whatever the
// weights, and Evaluate is deterministic.
func TestEvaluateSeesViews(t *testing.T) {
	task := tinyTask(t, 64, 16, func(c *Config) { c.CropMin, c.CropMax, c.CropDelete = 1, 1, 0; c.Views = ViewsCrop })
	// Texts that fit: a whole-text crop of a longer one is a random window.
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	_, _, dev, err := rundir.Carve(d, "train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	var short []Text
	for _, x := range QueryTexts(d, dev.Queries) {
		if len(task.Tok.Encode(x.Text)) <= task.Cfg.MaxLen-2 && len(short) < 64 {
			short = append(short, x)
		}
	}
	if len(short) < 48 {
		t.Fatalf("%d short dev texts", len(short))
	}
	task.Dev = short
	if err := task.Prepare(); err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(1))
	a, err := task.Evaluate(store)
	if err != nil {
		t.Fatal(err)
	}
	b, err := task.Evaluate(store)
	if err != nil {
		t.Fatal(err)
	}
	if a["contrastive_acc"] != 100 {
		t.Errorf("whole-text views: contrastive_acc %.2f, want 100", a["contrastive_acc"])
	}
	for k, v := range a {
		if b[k] != v {
			t.Errorf("%s: %v then %v", k, v, b[k])
		}
	}
	if v := a["mlm_loss"]; math.Abs(v-math.Log(float64(task.Tok.VocabSize()))) > 1.5 {
		t.Errorf("untrained mlm_loss %.3f, want about log(vocab) = %.3f", v, math.Log(float64(task.Tok.VocabSize())))
	}
	if _, ok := a["loss"]; !ok {
		t.Errorf("metrics %v: no loss", a)
	}
}

// TestPretrainLearns trains a tiny encoder for a few epochs on part of the embedded corpus
// and checks that the dev contrastive and MLM losses fall below the untrained encoder's and
// the accuracies rise; the MLM head lives under /cls/predictions, its decoder tied.
func TestPretrainLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	task := tinyTask(t, 480, 32, nil)
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(1))
	before, err := task.Evaluate(store)
	if err != nil {
		t.Fatal(err)
	}
	o := train.DefaultOptimizer()
	o.LR, o.Warmup = 3e-3, 5
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := train.Run(task.Backend, store, task, train.Config{RunDir: dir, Seed: 1, Epochs: 4, Metric: "contrastive_acc", KeepLast: 1, Optimizer: o, Quiet: true}, false); err != nil {
		t.Fatal(err)
	}
	after, err := task.Evaluate(store)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("before %v\nafter %v", before, after)
	// The run's dev curve moves (each evaluation sees the current weights) and ends at after.
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var curve []float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec map[string]float64
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if v, ok := rec["dev_contrastive_loss"]; ok {
			curve = append(curve, v)
		}
	}
	if len(curve) != 4 || curve[0] == curve[3] || curve[3] != after["contrastive_loss"] {
		t.Errorf("dev contrastive loss curve %v (one per epoch), then %v", curve, after["contrastive_loss"])
	}
	for _, c := range []struct {
		k    string
		fall float64
	}{{"contrastive_loss", 0.5}, {"mlm_loss", 0.2}} {
		if !(after[c.k] < before[c.k]-c.fall) {
			t.Errorf("%s %.3f after 60 steps, %.3f untrained: did not fall by %v", c.k, after[c.k], before[c.k], c.fall)
		}
	}
	for _, k := range []string{"contrastive_acc", "mlm_acc"} {
		if !(after[k] > before[k]) {
			t.Errorf("%s %.2f after 60 steps, %.2f untrained: did not rise", k, after[k], before[k])
		}
	}
	vocab := task.Tok.VocabSize()
	for _, v := range []struct {
		path string
		dims []int
	}{
		{"/cls/predictions/transform/dense/weight", []int{32, 32}},
		{"/cls/predictions/transform/LayerNorm/weight", []int{32}},
		{"/cls/predictions/bias", []int{vocab}},
		{"/embeddings/word_embeddings/weight", []int{vocab, 32}},
	} {
		x := store.GetVariable(v.path)
		if x == nil {
			t.Errorf("no variable %s", v.path)
			continue
		}
		if d := x.Shape().Dimensions; !slices.Equal(d, v.dims) {
			t.Errorf("%s: %v, want %v", v.path, d, v.dims)
		}
	}
	for x := range store.IterVariables() {
		if strings.Contains(x.Path(), "decoder") {
			t.Errorf("a decoder variable %s: the decoder must be tied to the word embeddings", x.Path())
		}
	}
}

// TestPretrainResume: a run stopped after k steps and resumed ends with the uninterrupted
// run's weights, bit for bit, on the go backend.
func TestPretrainResume(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	cfg := func(dir string) train.Config {
		o := train.DefaultOptimizer()
		o.LR, o.Warmup = 3e-3, 2
		return train.Config{RunDir: dir, Seed: 1, Epochs: 2, Metric: "contrastive_acc", KeepLast: 2, Optimizer: o, Quiet: true}
	}
	store := func() *model.Store {
		s := model.NewStore()
		s.SetParam(model.ParamInitialSeed, int64(3))
		return s
	}
	task := tinyTask(t, 96, 16, nil)
	per := task.Batches(0)
	refStore := store()
	if _, err := train.Run(task.Backend, refStore, task, cfg(filepath.Join(t.TempDir(), "ref")), false); err != nil {
		t.Fatal(err)
	}
	want := weights(refStore)
	for _, k := range []int{per + 1, 2*per - 1} { // between the checkpoints (one per epoch)
		dir := filepath.Join(t.TempDir(), "run")
		c := cfg(dir)
		c.StopAfter = k
		if _, err := train.Run(task.Backend, store(), tinyTask(t, 96, 16, nil), c, false); !errors.Is(err, train.ErrStopped) {
			t.Fatalf("stop after %d: %v", k, err)
		}
		c.StopAfter = 0
		resumed := model.NewStore()
		if _, err := train.Run(task.Backend, resumed, tinyTask(t, 96, 16, nil), c, true); err != nil {
			t.Fatalf("resume after %d: %v", k, err)
		}
		got := weights(resumed)
		if len(got) != len(want) {
			t.Fatalf("resumed store has %d variables, want %d", len(got), len(want))
		}
		for p, w := range want {
			if !bytes.Equal(got[p], w) {
				t.Fatalf("stopped after %d steps and resumed: variable %s differs from the uninterrupted run", k, p)
			}
		}
	}
}

func weights(store *model.Store) map[string][]byte {
	out := map[string][]byte{}
	for v := range store.IterVariables() {
		var b []byte
		v.MustValue().ConstBytes(func(x []byte) { b = append(b, x...) })
		out[v.Path()] = b
	}
	return out
}

func raw(x *tensors.Tensor) []byte {
	var b []byte
	x.ConstBytes(func(d []byte) { b = append(b, d...) })
	return b
}

func tensorsInt32(x *tensors.Tensor) ([]int32, error)     { return tensors.CopyFlatData[int32](x) }
func tensorsFloat32(x *tensors.Tensor) ([]float32, error) { return tensors.CopyFlatData[float32](x) }

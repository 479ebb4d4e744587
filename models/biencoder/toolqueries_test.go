package biencoder

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// TestToolQuery: a tool with fields gets its name with probability ToolQueryNameRate (within
// 4 standard deviations), else a contiguous span of its description's words (at least
// ToolQueryMinWords, at most the cap, several lengths); a tool without fields gets spans of
// its text, never a name.
func TestToolQuery(t *testing.T) {
	desc := "returns the current temperature humidity wind speed and sky conditions for any city or pair of coordinates on earth"
	for _, tc := range []struct {
		name     string
		tool     data.Tool
		src      string // the words spans come from
		named    string // the name view ("" none)
		maxWords int
	}{
		{"fields", data.Tool{Text: "category_name:Weather, tool_name:SkyCast, api_name:Current Conditions, api_description:" + desc + ", required_params: []"},
			desc, "SkyCast Current Conditions", 30},
		{"no fields", data.Tool{Text: desc}, desc, "", 30},
		{"capped", data.Tool{Text: desc}, desc, "", 4},
		{"short", data.Tool{Text: "get weather"}, "get weather", "", 30},
	} {
		src := ToolQuerySourceOf(tc.tool)
		if src.Name != tc.named || strings.Join(src.Words, " ") != tc.src {
			t.Fatalf("%s: source %+v", tc.name, src)
		}
		words := strings.Fields(tc.src)
		r := rand.New(rand.NewPCG(1, 2))
		const n = 2000
		names, lens := 0, map[int]bool{}
		for range n {
			q := ToolQuery(r, src, tc.maxWords)
			if tc.named != "" && q == tc.named {
				names++
				continue
			}
			w := strings.Fields(q)
			least := min(ToolQueryMinWords, len(words))
			if len(w) < least || len(w) > max(tc.maxWords, 1) || len(w) > int(ToolQueryMaxFrac*float64(len(words)))+least {
				t.Fatalf("%s: %q has %d words (source %d, cap %d)", tc.name, q, len(w), len(words), tc.maxWords)
			}
			if !strings.Contains(" "+tc.src+" ", " "+q+" ") {
				t.Fatalf("%s: %q is not a span of %q", tc.name, q, tc.src)
			}
			lens[len(w)] = true
		}
		if tc.named == "" && names != 0 {
			t.Errorf("%s: %d names drawn for a tool without fields", tc.name, names)
		}
		if tc.named != "" {
			p := ToolQueryNameRate
			if sd := math.Sqrt(p * (1 - p) / n); math.Abs(float64(names)/n-p) > 4*sd {
				t.Errorf("%s: the name drawn %d times of %d, want rate %v", tc.name, names, n, p)
			}
		}
		if len(words) > 2*ToolQueryMinWords && tc.maxWords >= ToolQueryMinWords+2 && len(lens) < 3 {
			t.Errorf("%s: %d span lengths drawn", tc.name, len(lens))
		}
	}
}

// heldOutTask returns a task over the held-out-tool view (20%, seed 1) of the embedded
// dataset, its training split carved as train biencoder does (dev 0.1, seed 1), with n tool
// queries per tool (no backend: batches only).
func heldOutTask(t *testing.T, n, batch int, strict bool) *Task {
	return newHeldOutTask(t, func(x *Task) { x.BatchSize, x.StrictBatches, x.ToolQueries = batch, strict, n })
}

// newHeldOutTask returns heldOutTask's task (a 1-layer BERT over a vocabulary of the view's
// tool texts, queries of 16 and tools of 32 tokens) after set changed it, prepared.
func newHeldOutTask(t *testing.T, set func(*Task)) *Task {
	t.Helper()
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.HoldoutTools(0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, tr, dev, err := rundir.Carve(v, "train", 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, tool := range v.Tools {
		texts = append(texts, tool.Text)
	}
	vocab, err := tokenize.BuildVocab(texts, 400, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := encoder.New("bert", encoder.Sizes{Vocab: tok.VocabSize(), Layers: 1, Hidden: 8, Heads: 2, Intermediate: 16, MaxPositions: 64})
	if err != nil {
		t.Fatal(err)
	}
	x := &Task{
		Cfg:  &Config{Encoder: bc, Pooling: encoder.PoolMean, Shared: true, QueryMaxLen: 16, ToolMaxLen: 32, Similarity: "cosine", Temperature: 0.05},
		Data: v, Train: tr, Dev: dev, Tok: tok, Seed: 1,
	}
	set(x)
	if err := x.Prepare(); err != nil {
		t.Fatal(err)
	}
	return x
}

// TestToolQueriesHeldOut: on a held-out-tool view, each epoch holds n pseudo pairs of every
// tool (held-out and dev tools included: n × tools in all) besides every real pair once;
// pseudo ids meet no real query index; each pseudo row of a batch is its tool's name or a
// span of its tool's text (the tool the row's positive is), tokenized as a query, its
// positive the tool's text and its false-negative mask row {its tool}; real rows are
// unchanged; strict batches repeat no query and no tool; two tasks give the same batches;
// epochs draw different texts.
func TestToolQueriesHeldOut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		batch  int
		strict bool
	}{
		{"one per tool, strict", 1, 16, true},
		{"three per tool, strict", 3, 16, true},
		{"two per tool, filled", 2, 32, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, again := heldOutTask(t, tc.n, tc.batch, tc.strict), heldOutTask(t, tc.n, tc.batch, tc.strict)
			d := x.Data
			nReal := len(x.Train.Pairs())
			if len(d.HeldOut) == 0 {
				t.Fatal("the view holds no tool out")
			}
			inTrain := map[int]bool{}
			for _, p := range x.Train.Pairs() {
				inTrain[p[1]] = true
			}
			texts := map[int]map[string]bool{} // pseudo id -> texts over epochs
			for e := range 2 {
				// Every pair of the epoch, in the sampler's batches (a trailing singleton,
				// which has no in-batch negative, is then left out of the task's).
				all := train.NoDuplicateBatches(x.pairs, tc.batch, x.Seed, e, !tc.strict)
				if n := len(all); x.Batches(e) != n && (x.Batches(e) != n-1 || len(all[n-1]) != 1) {
					t.Fatalf("epoch %d: %d batches, the sampler's %d", e, x.Batches(e), n)
				}
				pseudo, realSeen := map[int]int{}, map[[2]int]bool{}
				for _, b := range all {
					for _, p := range b {
						if x.pseudo.is(p.Query) {
							pseudo[p.Query]++
						} else {
							realSeen[[2]int{p.Query, p.Tool}] = true
						}
					}
				}
				for i := range x.Batches(e) {
					b := x.batches(e)[i]
					in, nb, err := x.Batch(e, i)
					if err != nil {
						t.Fatal(err)
					}
					in2, _, err := again.Batch(e, i)
					if err != nil {
						t.Fatal(err)
					}
					for k := range in {
						if !bytes.Equal(tensorBytes(in[k]), tensorBytes(in2[k])) {
							t.Fatalf("epoch %d batch %d input %d differs between two tasks", e, i, k)
						}
					}
					qRows, tRows := int32Rows(in[0]), int32Rows(in[2])
					flat, w := tensors.MustCopyFlatData[bool](in[4]), in[4].Shape().Dimensions[1]
					mask := make([][]bool, len(b))
					for j := range mask {
						mask[j] = flat[j*w : (j+1)*w]
					}
					if nb != len(b) || len(qRows) != nb || len(mask) != nb {
						t.Fatalf("epoch %d batch %d: %d examples, %d pairs, %d query rows", e, i, nb, len(b), len(qRows))
					}
					qs, ts := map[int]bool{}, map[int]bool{}
					for j, p := range b {
						if tc.strict && (qs[p.Query] || ts[p.Tool]) {
							t.Fatalf("epoch %d batch %d repeats query %d or tool %d", e, i, p.Query, p.Tool)
						}
						qs[p.Query], ts[p.Tool] = true, true
						if !slices.Equal(trimPad(tRows[j]), x.tools[p.Tool]) {
							t.Fatalf("epoch %d batch %d row %d: positive is not tool %d's text", e, i, j, p.Tool)
						}
						if p.Query < len(d.Queries) {
							if _, ok := x.Train.Relevant[p.Query]; !ok || !slices.Contains(x.Train.Relevant[p.Query], p.Tool) {
								t.Fatalf("real pair %v is no training pair", p)
							}
							if !slices.Equal(trimPad(qRows[j]), x.Tok.Single(d.Queries[p.Query].Text, x.Cfg.QueryMaxLen)) {
								t.Fatalf("epoch %d batch %d row %d: real query row is not the query's text", e, i, j)
							}
							continue
						}
						if p.Query < len(d.Queries) || !x.pseudo.is(p.Query) {
							t.Fatalf("pseudo id %d is no pseudo query (%d queries)", p.Query, len(d.Queries))
						}
						src := ToolQuerySourceOf(d.Tools[p.Tool])
						q := x.pseudo.text(e, p.Query)
						if q != src.Name && !strings.Contains(" "+strings.Join(src.Words, " ")+" ", " "+q+" ") {
							t.Fatalf("pseudo query %q of tool %d is neither its name %q nor a span of %q", q, p.Tool, src.Name, src.Words)
						}
						if !slices.Equal(trimPad(qRows[j]), x.Tok.Single(q, x.Cfg.QueryMaxLen)) {
							t.Fatalf("epoch %d batch %d row %d: query row is not the pseudo text %q", e, i, j, q)
						}
						for k, c := range b {
							if want := c.Tool == p.Tool; mask[j][k] != want {
								t.Fatalf("epoch %d batch %d: pseudo row %d (tool %d) mask[%d] %v, column tool %d", e, i, j, p.Tool, k, mask[j][k], c.Tool)
							}
						}
						if texts[p.Query] == nil {
							texts[p.Query] = map[string]bool{}
						}
						texts[p.Query][q] = true
					}
				}
				perTool := map[int]int{}
				for id, c := range pseudo {
					if c != 1 {
						t.Fatalf("epoch %d: pseudo id %d seen %d times", e, id, c)
					}
					perTool[x.pseudo.tool(id)]++
				}
				if len(pseudo) != tc.n*len(d.Tools) || len(perTool) != len(d.Tools) || len(realSeen) != nReal {
					t.Fatalf("epoch %d: %d pseudo pairs over %d tools (want %d × %d), %d of %d real pairs", e, len(pseudo), len(perTool), tc.n, len(d.Tools), len(realSeen), nReal)
				}
				for tool, c := range perTool {
					if c != tc.n {
						t.Fatalf("epoch %d: tool %d has %d pseudo pairs, want %d", e, tool, c, tc.n)
					}
				}
				held, unseen := 0, 0
				for _, h := range d.HeldOut {
					if perTool[h] == tc.n {
						held++
					}
				}
				for tool := range perTool {
					if !inTrain[tool] {
						unseen++
					}
				}
				if held != len(d.HeldOut) || unseen <= held {
					t.Fatalf("epoch %d: %d of %d held-out tools have pseudo pairs; %d tools in no training pair", e, held, len(d.HeldOut), unseen)
				}
			}
			changed := 0
			for _, s := range texts {
				if len(s) > 1 {
					changed++
				}
			}
			if changed < len(texts)/4 {
				t.Errorf("only %d of %d pseudo queries drew another text in epoch 1", changed, len(texts))
			}
			want := "per tool × 70 tools with a text of 70; 14 held-out tools"
			if s := x.ToolQueriesSummary(); !strings.Contains(s, want) {
				t.Errorf("summary %q, want it to contain %q", s, want)
			}
		})
	}
}

// TestToolQueriesOff: without tool queries the pairs are the training pairs only and the
// summary is empty; a negative count is refused.
func TestToolQueriesOff(t *testing.T) {
	x := heldOutTask(t, 0, 16, false)
	if len(x.pairs) != len(x.Train.Pairs()) || x.ToolQueriesSummary() != "" {
		t.Errorf("no tool queries: %d pairs (%d training pairs), summary %q", len(x.pairs), len(x.Train.Pairs()), x.ToolQueriesSummary())
	}
	x.ToolQueries = -1
	if err := x.Prepare(); err == nil || !strings.Contains(err.Error(), "-1 tool queries per tool: must be >= 0") {
		t.Errorf("-1 tool queries: %v", err)
	}
}

// TestToolQueryRand: the pseudo text generator depends on (seed, epoch, pair) and on nothing
// else.
func TestToolQueryRand(t *testing.T) {
	draw := func(seed uint64, e, p int) uint64 { return toolQueryRand(seed, e, p).Uint64() }
	if draw(1, 2, 3) != draw(1, 2, 3) {
		t.Fatal("same (seed, epoch, pair): different draws")
	}
	seen := map[uint64][3]int{}
	for _, k := range [][3]int{{1, 0, 0}, {2, 0, 0}, {1, 1, 0}, {1, 0, 1}, {1, 1, 2}, {1, 2, 1}} {
		v := draw(uint64(k[0]), k[1], k[2])
		if prev, ok := seen[v]; ok {
			t.Errorf("%v and %v draw the same number", k, prev)
		}
		seen[v] = k
	}
	if draw(1, 0, 0) == dropRand(1, 0, 0, 0).Uint64() {
		t.Error("tool queries and tool dropout share a stream")
	}
}

// TestToolQueriesResume: with tool queries and hard negatives, a run stopped between
// checkpoints and resumed ends bit-identical to an uninterrupted run (go backend); the
// batches hold pseudo rows.
func TestToolQueriesResume(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	task := func() *Task {
		x := padTask(t, "bert", 4, 1)
		x.BatchSize, x.ToolQueries = 4, 1
		if err := x.Prepare(); err != nil {
			t.Fatal(err)
		}
		return x
	}
	ref := task()
	pseudo := 0
	for _, p := range ref.batches(0)[0] {
		if ref.pseudo.is(p.Query) {
			pseudo++
		}
	}
	if pseudo == 0 || len(ref.pairs) != 24+12 {
		t.Fatalf("%d pairs, %d pseudo rows in batch 0", len(ref.pairs), pseudo)
	}
	for e := range 3 { // a pseudo pair's (random) hard negative is another tool
		for i, b := range ref.batches(e) {
			in, _, err := ref.Batch(e, i)
			if err != nil {
				t.Fatal(err)
			}
			negs := int32Rows(in[5])
			for j, p := range b {
				if ref.pseudo.is(p.Query) && slices.Equal(trimPad(negs[j]), ref.tools[p.Tool]) {
					t.Fatalf("epoch %d batch %d: pseudo row %d has its own tool %d as hard negative", e, i, j, p.Tool)
				}
			}
		}
	}
	cfg := func(dir string) train.Config {
		o := train.DefaultOptimizer()
		o.LR, o.Warmup = 3e-3, 2
		return train.Config{RunDir: dir, Seed: 1, Epochs: 2, KeepLast: 2, Optimizer: o, Quiet: true}
	}
	store := func() *model.Store {
		s := model.NewStore()
		s.SetParam(model.ParamInitialSeed, int64(3))
		return s
	}
	refStore := store()
	if _, err := train.Run(ref.Backend, refStore, ref, cfg(filepath.Join(t.TempDir(), "ref")), false); err != nil {
		t.Fatal(err)
	}
	want := weights(refStore)
	k := ref.Batches(0) + 1 // between checkpoints (one per epoch)
	dir := filepath.Join(t.TempDir(), "run")
	c := cfg(dir)
	c.StopAfter = k
	if _, err := train.Run(ref.Backend, store(), task(), c, false); !errors.Is(err, train.ErrStopped) {
		t.Fatalf("stop after %d: %v", k, err)
	}
	c.StopAfter = 0
	resumed := model.NewStore()
	if _, err := train.Run(ref.Backend, resumed, task(), c, true); err != nil {
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

package biencoder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// mineData is a hand-built split: dataset query 0 is unjudged, queries 1..6 (judged
// positions 0..5) use tools {A}, {A,B}, {B}, {C}, {C}, {D}.
func mineData() (*data.Dataset, *data.Split) {
	d := &data.Dataset{Name: "mine", QueryIndex: map[string]int{}}
	tools := [][]int{nil, {0}, {0, 1}, {1}, {2}, {2}, {3}}
	s := &data.Split{Name: "train", Relevant: map[int][]int{}}
	for i, ts := range tools {
		id := fmt.Sprintf("q%d", i)
		d.Queries = append(d.Queries, data.Query{ID: id, Text: id})
		d.QueryIndex[id] = i
		s.Queries = append(s.Queries, i)
		if ts != nil {
			s.Relevant[i] = ts
		}
	}
	return d, s
}

func TestMineTriplets(t *testing.T) {
	_, s := mineData()
	// Scores by judged position (anchor row, candidate column).
	scores := [][]float32{
		{9, 5, 1, 7, 7, 2}, // A: shares with 1; others 3 (7), 4 (7, tie: later), 5 (2), 2 (1)
		{4, 9, 4, 8, 0, 3}, // A,B: shares with 0 and 2 (tie: 0 first); others 3 (8), 5 (3), 4 (0)
		{1, 2, 9, 3, 3, 3}, // B: shares with 1; others 3, 4, 5 tied at 3, then 0
		{5, 6, 7, 9, 1, 8}, // C: shares with 4; others 5 (8), 2 (7), 1 (6), 0 (5)
		{0, 0, 0, 0, 9, 0}, // C: shares with 3; the rest tied: by position
		{9, 9, 9, 9, 9, 9}, // D: no other query uses D: no positive, left out
	}
	score := func(i int) ([]float32, error) { return scores[i], nil }
	// Dataset index = judged position + 1.
	for _, tc := range []struct {
		name     string
		pos, neg int
		want     []Neighbours
	}{
		{"2+2", 2, 2, []Neighbours{
			{1, []int{2}, []int{4, 5}},
			{2, []int{1, 3}, []int{4, 6}},
			{3, []int{2}, []int{4, 5}},
			{4, []int{5}, []int{6, 3}},
			{5, []int{4}, []int{1, 2}},
		}},
		{"1+3", 1, 3, []Neighbours{
			{1, []int{2}, []int{4, 5, 6}},
			{2, []int{1}, []int{4, 6, 5}},
			{3, []int{2}, []int{4, 5, 6}},
			{4, []int{5}, []int{6, 3, 2}},
			{5, []int{4}, []int{1, 2, 3}},
		}},
		// More than there are: every sharing and non-sharing query, nearest first.
		{"9+9", 9, 9, []Neighbours{
			{1, []int{2}, []int{4, 5, 6, 3}},
			{2, []int{1, 3}, []int{4, 6, 5}},
			{3, []int{2}, []int{4, 5, 6, 1}},
			{4, []int{5}, []int{6, 3, 2, 1}},
			{5, []int{4}, []int{1, 2, 3, 6}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, skipped, err := MineTriplets(s, score, tc.pos, tc.neg)
			if err != nil {
				t.Fatal(err)
			}
			if skipped != 1 {
				t.Errorf("skipped %d anchors, want 1 (the only query using D)", skipped)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("mined\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
	// Invariants on random scores: positives share a tool, negatives share none, never the
	// anchor itself, sorted by score; the same scores give the same triplets.
	r := rand.New(rand.NewPCG(3, 4))
	rnd := make([][]float32, 6)
	for i := range rnd {
		for range 6 {
			rnd[i] = append(rnd[i], float32(r.IntN(4))) // ties on purpose
		}
	}
	rs := func(i int) ([]float32, error) { return rnd[i], nil }
	a, _, err := MineTriplets(s, rs, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := MineTriplets(s, rs, 3, 3)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("mining is not deterministic")
	}
	share := func(x, y int) bool {
		for _, t := range s.Relevant[x] {
			if slices.Contains(s.Relevant[y], t) {
				return true
			}
		}
		return false
	}
	for _, n := range a {
		for _, p := range n.Positives {
			if p == n.Anchor || !share(n.Anchor, p) {
				t.Errorf("anchor %d: positive %d", n.Anchor, p)
			}
		}
		for k, q := range n.Negatives {
			if q == n.Anchor || share(n.Anchor, q) {
				t.Errorf("anchor %d: negative %d", n.Anchor, q)
			}
			if k > 0 {
				prev := n.Negatives[k-1]
				if sa, sb := rnd[n.Anchor-1][prev-1], rnd[n.Anchor-1][q-1]; sa < sb || sa == sb && prev > q {
					t.Errorf("anchor %d: negatives %v not nearest first", n.Anchor, n.Negatives)
				}
			}
		}
	}
	for _, tc := range []struct {
		name     string
		score    Scorer
		pos, neg int
		want     string
	}{
		{"no positives", score, 0, 1, "want >= 1 each"},
		{"no negatives", score, 1, 0, "want >= 1 each"},
		{"short scores", func(int) ([]float32, error) { return []float32{1}, nil }, 1, 1, "1 scores for 6 training queries"},
		{"scorer error", func(int) ([]float32, error) { return nil, errors.New("boom") }, 1, 1, "boom"},
	} {
		if _, _, err := MineTriplets(s, tc.score, tc.pos, tc.neg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestScorers(t *testing.T) {
	got, err := EmbeddingScorer([][]float32{{1, 0}, {0.5, 2}, {-1, 1}})(1)
	if err != nil || !reflect.DeepEqual(got, []float32{0.5, 4.25, 1.5}) {
		t.Errorf("embedding scores %v, %v", got, err)
	}
	if _, err := EmbeddingScorer([][]float32{{1, 0}, {1}})(0); err == nil {
		t.Error("ragged embeddings accepted")
	}
	texts := []string{"weather in lisbon", "send an email", "lisbon weather tomorrow"}
	bs, err := BM25Scorer(texts)(0)
	if err != nil || len(bs) != 3 || !(bs[2] > bs[1]) || bs[1] != 0 {
		t.Errorf("BM25 scores %v, %v: want query 2 (two shared terms) above query 1 (none, 0)", bs, err)
	}
}

func TestTripletsFile(t *testing.T) {
	d, s := mineData()
	ns, _, err := MineTriplets(s, func(i int) ([]float32, error) { return make([]float32, 6), nil }, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), TripletsFile)
	if err := WriteTriplets(p, d, ns); err != nil {
		t.Fatal(err)
	}
	back, err := ReadTriplets(p, d)
	if err != nil || !reflect.DeepEqual(back, ns) {
		t.Fatalf("read back %v, %v; wrote %v", back, err, ns)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"json", `{"query_id": "q1",` + "\n", ":1: malformed JSON"},
		{"anchor", `{"query_id":"zz","positive_ids":["q1"],"negative_ids":["q2"]}`, `:1: unknown query id "zz"`},
		{"positive", "\n" + `{"query_id":"q1","positive_ids":["zz"],"negative_ids":["q2"]}`, `:2: unknown query id "zz"`},
		{"negative", `{"query_id":"q1","positive_ids":["q2"],"negative_ids":["zz"]}`, `unknown query id "zz"`},
		{"empty", `{"query_id":"q1","positive_ids":["q2"],"negative_ids":[]}`, "0 negatives"},
	} {
		bad := filepath.Join(t.TempDir(), "bad.jsonl")
		os.WriteFile(bad, []byte(tc.body), 0o644)
		if _, err := ReadTriplets(bad, d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// q2qTask is a query2query task over a synthetic dataset: 4 tools, each with its own words;
// a query draws two of its tool's words and fillers; dev queries are held out. The triplets
// are mined by BM25.
func q2qTask(t *testing.T, seed uint64) *QueryTask {
	t.Helper()
	words := [][]string{
		{"weather", "rain", "forecast", "sunny", "temperature"},
		{"email", "send", "mail", "inbox", "message"},
		{"flight", "book", "airport", "ticket", "plane"},
		{"music", "play", "song", "playlist", "album"},
	}
	filler := []string{"please", "can", "you", "the", "for", "me", "now", "today", "a", "my"}
	d := &data.Dataset{Name: "q2q", QueryIndex: map[string]int{}, Splits: map[string]*data.Split{}}
	var vocabTexts []string
	for i, w := range words {
		d.Tools = append(d.Tools, data.Tool{ID: fmt.Sprintf("t%d", i), Text: strings.Join(w, " ")})
		vocabTexts = append(vocabTexts, strings.Join(w, " "))
	}
	vocabTexts = append(vocabTexts, strings.Join(filler, " "))
	r := rand.New(rand.NewPCG(7, 7))
	tr := &data.Split{Name: "train", Relevant: map[int][]int{}}
	dev := &data.Split{Name: "dev", Relevant: map[int][]int{}}
	for i := range 48 {
		tool := i % 4
		ws := []string{words[tool][r.IntN(5)], words[tool][r.IntN(5)], filler[r.IntN(10)], filler[r.IntN(10)], filler[r.IntN(10)]}
		r.Shuffle(len(ws), func(a, b int) { ws[a], ws[b] = ws[b], ws[a] })
		id := fmt.Sprintf("q%d", i)
		d.QueryIndex[id] = len(d.Queries)
		d.Queries = append(d.Queries, data.Query{ID: id, Text: strings.Join(ws, " ")})
		s := tr
		if i >= 40 {
			s = dev
		}
		s.Queries, s.Relevant[i] = append(s.Queries, i), []int{tool}
	}
	vocab, err := tokenize.BuildVocab(vocabTexts, 100, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := encoder.New("bert", encoder.Sizes{Vocab: tok.VocabSize(), Layers: 1, Hidden: 16, Heads: 2, Intermediate: 32, MaxPositions: 16})
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 0, len(tr.Queries))
	for _, q := range tr.Judged() {
		texts = append(texts, d.Queries[q].Text)
	}
	ns, _, err := MineTriplets(tr, BM25Scorer(texts), 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	task := &QueryTask{
		Cfg: &Config{Encoder: bc, Pooling: encoder.PoolMean, Shared: true, QueryMaxLen: 12, ToolMaxLen: 12, Similarity: "cosine",
			Temperature: 0.05, Objective: ObjectiveQuery2Query, Margin: 1},
		Data: d, Train: tr, Dev: dev, Tok: tok, Backend: be, BatchSize: 8, Seed: seed, Triplets: ns,
	}
	if err := task.Prepare(); err != nil {
		t.Fatal(err)
	}
	return task
}

func TestQueryTaskBatches(t *testing.T) {
	a, b, c := q2qTask(t, 1), q2qTask(t, 1), q2qTask(t, 2)
	if a.Examples() != 40*2 {
		t.Fatalf("%d examples, want 80 (40 anchors x 2 positives)", a.Examples())
	}
	neighbours := map[int]Neighbours{}
	for _, n := range a.Triplets {
		neighbours[n.Anchor] = n
	}
	differ := false
	for epoch := range 2 {
		seen := map[[2]int]int{}
		for i := range a.Batches(epoch) {
			ta, err := a.triplets(epoch, i)
			if err != nil {
				t.Fatal(err)
			}
			tb, _ := b.triplets(epoch, i)
			if !reflect.DeepEqual(ta, tb) {
				t.Fatalf("epoch %d batch %d: same seed, different triplets", epoch, i)
			}
			if tc, _ := c.triplets(epoch, i); !reflect.DeepEqual(ta, tc) {
				differ = true
			}
			for _, x := range ta {
				n := neighbours[x[0]]
				if !slices.Contains(n.Positives, x[1]) || !slices.Contains(n.Negatives, x[2]) || x[1] == x[0] || x[2] == x[0] {
					t.Fatalf("triplet %v: not (anchor, one of its positives %v, one of its negatives %v)", x, n.Positives, n.Negatives)
				}
				seen[[2]int{x[0], x[1]}]++
			}
			in, n, err := a.Batch(epoch, i)
			if err != nil || len(in) != 2 || in[0].Shape().Dimensions[0] != 3*n || n != len(ta) {
				t.Fatalf("batch %d: %d inputs for %d examples, %v", i, len(in), n, err)
			}
		}
		if len(seen) != a.Examples() {
			t.Fatalf("epoch %d visits %d distinct (anchor, positive) pairs, want all %d", epoch, len(seen), a.Examples())
		}
		for p, k := range seen {
			if k != 1 {
				t.Fatalf("epoch %d: pair %v visited %d times", epoch, p, k)
			}
		}
	}
	if !differ {
		t.Error("seeds 1 and 2 give the same batches")
	}
	if _, _, err := a.Batch(0, a.Batches(0)); err == nil {
		t.Error("batch out of range accepted")
	}
}

// TestQueryTaskTrain trains the query2query objective briefly: the loss falls, the dev
// evaluation (usage vectors from the training part) runs, and a run stopped after k steps
// and resumed ends with the uninterrupted run's weights.
func TestQueryTaskTrain(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	task := q2qTask(t, 1)
	cfg := func(dir string) train.Config {
		o := train.DefaultOptimizer()
		// Clipping on (the default clip norm): the global gradient norm is summed in variable
		// path order, so a restored store clips exactly as the uninterrupted one.
		o.LR, o.Warmup = 3e-3, 2
		return train.Config{RunDir: dir, Seed: 1, Epochs: 4, Metric: "recall@1", KeepLast: 2, Optimizer: o, Quiet: true}
	}
	store := func() *model.Store {
		s := model.NewStore()
		s.SetParam(model.ParamInitialSeed, int64(3))
		return s
	}
	ref := filepath.Join(t.TempDir(), "ref")
	refStore := store()
	sum, err := train.Run(task.Backend, refStore, task, cfg(ref), false)
	if err != nil {
		t.Fatal(err)
	}
	losses := stepLosses(t, ref)
	if len(losses) != 40 {
		t.Fatalf("%d steps, want 40 (4 epochs of 10 batches)", len(losses))
	}
	first, last := mean(losses[:10]), mean(losses[30:])
	t.Logf("loss: first epoch %.3f, last %.3f; best dev %v", first, last, sum.BestMetrics)
	if !(last < 0.7*first) {
		t.Errorf("loss %.3f in the first epoch, %.3f in the last: did not fall by 30%%", first, last)
	}
	if r1, ok := sum.Final["recall@1"]; !ok || r1 < 50 {
		t.Errorf("final dev %v: want recall@1 >= 50 with usage vectors (4 tools, chance 25)", sum.Final)
	}
	want := weights(refStore)
	for _, k := range []int{13, 27} { // checkpoints each epoch (10 steps): work since is lost
		dir := filepath.Join(t.TempDir(), "run")
		c := cfg(dir)
		c.StopAfter = k
		if _, err := train.Run(task.Backend, store(), q2qTask(t, 1), c, false); !errors.Is(err, train.ErrStopped) {
			t.Fatalf("stop after %d: %v", k, err)
		}
		c.StopAfter = 0
		resumed := model.NewStore()
		if _, err := train.Run(task.Backend, resumed, q2qTask(t, 1), c, true); err != nil {
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

func stepLosses(t *testing.T, dir string) []float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var rec struct {
			Loss *float64 `json:"loss"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Loss != nil {
			out = append(out, *rec.Loss)
		}
	}
	return out
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
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

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/bert"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/crossencoder"
	"github.com/toolret/toolret/tokenize"
)

type tinyRunDirs struct{ be, ce, qt, mlc string }

var (
	tinyOnce sync.Once
	tiny     tinyRunDirs
	tinyErr  error
)

// tinyRuns writes untrained (randomly initialised) runs of every kind for the embedded
// dataset, with the files real runs have: enough to exercise loading and the pipeline.
func tinyRuns(t *testing.T) tinyRunDirs {
	t.Helper()
	tinyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolret-eval-runs-")
		if err != nil {
			tinyErr = err
			return
		}
		tinyErr = writeTinyRuns(dir)
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tiny
}

func writeTinyRuns(dir string) error {
	d, err := data.Default()
	if err != nil {
		return err
	}
	be, err := backend.Open("go")
	if err != nil {
		return err
	}
	var texts []string
	for _, tool := range d.Tools {
		texts = append(texts, tool.Text)
	}
	for _, q := range d.Queries[:300] {
		texts = append(texts, q.Text)
	}
	vocab, err := tokenize.BuildVocab(texts, 600, 2, true)
	if err != nil {
		return err
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		return err
	}
	bc := bert.Default()
	bc.VocabSize, bc.NumHiddenLayers, bc.HiddenSize, bc.NumAttentionHeads, bc.IntermediateSize, bc.MaxPositionEmbeddings = tok.VocabSize(), 1, 16, 2, 32, 64
	save := func(run string, store *model.Store, files map[string][]byte) error {
		if _, err := checkpoints.Save(run, store, checkpoints.Manifest{Step: 1, Seed: 1, Fingerprint: d.Fingerprint()}, files); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(run, "train_config.json"), []byte(`{"seed": 1}`), 0o644)
	}
	newStore := func() (*model.Store, error) {
		s := model.NewStore()
		s.SetParam(model.ParamInitialSeed, int64(3))
		return s, bert.Init(s.RootScope(), bc, 3)
	}
	tiny = tinyRunDirs{filepath.Join(dir, "be"), filepath.Join(dir, "ce"), filepath.Join(dir, "qt"), filepath.Join(dir, "mlc")}

	bcfg := &biencoder.Config{BERT: bc, Pooling: bert.PoolMean, Shared: true, QueryMaxLen: 32, ToolMaxLen: 64, Similarity: "cosine", Temperature: 0.05}
	files, err := biencoder.WriteRunFiles(tiny.be, bcfg, tok)
	if err != nil {
		return err
	}
	store, err := newStore()
	if err != nil {
		return err
	}
	if err := save(tiny.be, store, files); err != nil {
		return err
	}

	ccfg := &crossencoder.Config{BERT: bc, MaxLen: 64, LossKind: crossencoder.LossBCE}
	if files, err = classifier.WriteRunFiles(tiny.ce, crossencoder.ConfigFile, ccfg.Marshal(), tok); err != nil {
		return err
	}
	if store, err = newStore(); err != nil {
		return err
	}
	// Scoring once creates the head's variables.
	if _, err := crossencoder.NewModel(ccfg, tok, be, store, texts[:len(d.Tools)]).Score(context.Background(), "q", []int{0}); err != nil {
		return err
	}
	if err := save(tiny.ce, store, files); err != nil {
		return err
	}
	if err := classifier.WriteSplit(tiny.ce, classifier.DataSplit{DevFraction: 0.1, Seed: 1}); err != nil {
		return err
	}

	for _, c := range []struct {
		run string
		cfg *classifier.Config
	}{
		{tiny.qt, &classifier.Config{Kind: classifier.KindQueryType, BERT: bc, MaxLen: 32, Labels: []string{classifier.LabelSingle, classifier.LabelMulti}, LossKind: "ce"}},
		{tiny.mlc, &classifier.Config{Kind: classifier.KindMLC, BERT: bc, MaxLen: 32, Labels: classifier.ToolLabels(d), LossKind: "bce"}},
	} {
		if files, err = classifier.WriteRunFiles(c.run, classifier.ConfigFile, c.cfg.Marshal(), tok); err != nil {
			return err
		}
		if store, err = newStore(); err != nil {
			return err
		}
		if _, err := (&classifier.Model{Cfg: c.cfg, Tok: tok, Backend: be, Store: store}).Probabilities([]string{"q"}); err != nil {
			return err
		}
		if err := save(c.run, store, files); err != nil {
			return err
		}
	}
	return nil
}

func runJSON(t *testing.T, kv map[string]string) map[string]any {
	t.Helper()
	kv["json"] = "true"
	setFlags(t, kv)
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("decode %q: %v", out.String(), err)
	}
	return m
}

func TestRerankMethods(t *testing.T) {
	if testing.Short() {
		t.Skip("runs models")
	}
	r := tinyRuns(t)
	base := func() map[string]string {
		// Small depths keep the test fast: the pipeline logic is the same at any depth.
		return map[string]string{"retriever": r.be, "reranker": r.ce, "k": "1,5,10", "m-seen": "3", "m-unseen": "8", "grid-m": "2:4,3:8"}
	}
	var retr, one map[string]any
	t.Run("retriever", func(t *testing.T) { retr = runJSON(t, map[string]string{"run": r.be, "k": "1,5,10"}) })
	// Reranking only the top 1 leaves the retriever's ranking unchanged.
	t.Run("rerank-1", func(t *testing.T) {
		kv := base()
		kv["method"], kv["m"] = "rerank-m", "1"
		one = runJSON(t, kv)
	})
	for _, k := range []string{"recall@1", "recall@5", "ndcg@10", "comp@10"} {
		if one[k] != retr[k] {
			t.Errorf("Rerank-1 %s = %v, retriever %v: they must be equal", k, one[k], retr[k])
		}
	}
	for _, tc := range []struct {
		name string
		kv   map[string]string
	}{
		{"rerank-m 5", map[string]string{"method": "rerank-m", "m": "5"}},
		{"toolrerank grid", map[string]string{"method": "rerank", "classifier": r.qt, "grid": "true", "subsets": "true"}},
		{"no hierarchy", map[string]string{"method": "rerank", "no-hierarchy": "true"}},
		{"single only", map[string]string{"method": "rerank", "only": "single", "tau-s": "0.6"}},
		{"multi only", map[string]string{"method": "rerank", "only": "multi", "n": "3"}},
		{"oracle type", map[string]string{"method": "rerank", "oracle-type": "true", "m-seen": "2", "m-unseen": "6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kv := base()
			for k, v := range tc.kv {
				kv[k] = v
			}
			m := runJSON(t, kv)
			for _, k := range []string{"recall@1", "recall@5", "ndcg@10", "comp@10"} {
				v, ok := m[k].(float64)
				if !ok || v < 0 || v > 100 {
					t.Errorf("%s = %v", k, m[k])
				}
			}
			// Rankings keep every coarse API, so recall@10 can only differ from the
			// retriever's through reordering within the reranked lists; all are valid.
			if tc.kv["subsets"] == "true" && m["subsets"] == nil {
				t.Errorf("no subsets in %v", m)
			}
		})
	}
}

// TestRerankAblations checks rows of the -ablations table (scores computed once for all
// variants) against the same variants run one by one.
func TestRerankAblations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs models")
	}
	r := tinyRuns(t)
	base := func() map[string]string {
		return map[string]string{"retriever": r.be, "reranker": r.ce, "k": "1,5,10", "grid-m": "2:4,3:8"}
	}
	kv := base()
	kv["method"], kv["classifier"], kv["ablations"], kv["json"] = "rerank", r.qt, "true", "true"
	setFlags(t, kv)
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Name    string
		Params  string
		Metrics map[string]any
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("decode %q: %v", out.String(), err)
	}
	if len(rows) != len(rerankVariants)+1 {
		t.Fatalf("%d rows, want %d", len(rows), len(rerankVariants)+1)
	}
	byName := map[string]map[string]any{}
	for _, row := range rows {
		byName[row.Name] = row.Metrics
	}
	single := map[string]map[string]string{
		"bi-encoder alone":    {"run": r.be},
		"Rerank-10":           {"method": "rerank-m", "m": "10"},
		"ToolRerank":          {"method": "rerank", "classifier": r.qt, "grid": "true"},
		"- oracle query type": {"method": "rerank", "oracle-type": "true", "grid": "true"},
	}
	for row, extra := range single {
		// Every flag a previous call set is reset: setFlags restores only at the end.
		kv := base()
		for k, v := range map[string]string{"ablations": "false", "grid": "false", "oracle-type": "false", "classifier": "", "run": "", "method": "bm25"} {
			kv[k] = v
		}
		for k, v := range extra {
			kv[k] = v
		}
		want := runJSON(t, kv)
		for _, k := range []string{"recall@1", "recall@5", "ndcg@10", "comp@10"} {
			if byName[row][k] != want[k] {
				t.Errorf("%s %s: table %v, alone %v", row, k, byName[row][k], want[k])
			}
		}
	}
	kv = base()
	kv["method"], kv["ablations"], kv["only"] = "rerank", "true", "single"
	setFlags(t, kv)
	if err := run(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-ablations") {
		t.Errorf("-ablations with -only: %v", err)
	}
}

func TestRerankErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs models")
	}
	r := tinyRuns(t)
	for _, tc := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"method": "rerank"}, "-retriever"},
		{map[string]string{"method": "rerank", "retriever": r.be, "reranker": r.ce}, "-classifier"},
		{map[string]string{"method": "rerank", "retriever": r.be, "reranker": r.ce, "only": "both"}, "-only"},
		{map[string]string{"method": "rerank", "retriever": r.be, "reranker": r.ce, "classifier": r.mlc}, "querytype"},
		{map[string]string{"method": "rerank", "retriever": r.be, "reranker": r.ce, "oracle-type": "true", "grid": "true", "grid-metric": "mrr"}, "mrr"},
		{map[string]string{"method": "rerank", "retriever": r.be, "reranker": r.ce, "oracle-type": "true", "grid": "true", "grid-m": "30:10"}, "m_s < m_u"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			setFlags(t, tc.kv)
			err := run(&bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestMLCRun evaluates an mlc classifier run with -run: cmd/eval must detect its kind.
func TestMLCRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs models")
	}
	r := tinyRuns(t)
	m := runJSON(t, map[string]string{"run": r.mlc, "k": "5"})
	if v, ok := m["recall@5"].(float64); !ok || v < 0 || v > 100 {
		t.Fatalf("mlc run: %v", m)
	}
	setFlags(t, map[string]string{"run": r.qt})
	if err := run(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "mlc") {
		t.Fatalf("a querytype run as a ranker: %v", err)
	}
}

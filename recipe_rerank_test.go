package toolret_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/internal/datatest"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/toolindex"
)

// rerankModel writes, under dir, a tiny pre-trained stand-in (plain, no recipe), a tiny
// cross-encoder in hf layout (ce), and model: plain exported with r as its recipe, the
// cross-encoder (r.Reranker's Dir set to ce) copied into model/reranker, as export -model
// plain -format hf -recipe-reranker ce writes it.
func rerankModel(t *testing.T, dir string, r export.Recipe) (plain, ce, model string) {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	plain, ce, model = filepath.Join(dir, "plain"), filepath.Join(dir, "ce"), filepath.Join(dir, "model")
	recipeModel(t, plain, nil)
	if err := exporttest.WriteCrossEncoderHF(ce, be, 3); err != nil {
		t.Fatal(err)
	}
	r.Version = export.RecipeVersion
	if r.Reranker != nil {
		c := *r.Reranker
		c.Path, c.Dir = export.RerankerDir, ce
		r.Reranker = &c
	}
	if _, err := toolret.Export(context.Background(), toolret.ExportConfig{Model: plain, Out: model, Recipe: &r, Backend: "go"}); err != nil {
		t.Fatal(err)
	}
	return plain, ce, model
}

// judged returns the judged queries of split name of d as rank queries.
func judged(t *testing.T, d *data.Dataset, s *data.Split) []rank.Query {
	t.Helper()
	var qs []rank.Query
	for _, q := range s.Judged() {
		qs = append(qs, rank.Query{Index: q, Text: d.Queries[q].Text})
	}
	return qs
}

// differ reports whether a and b differ in any overall figure.
func differ(a, b metrics.Report) bool {
	for _, k := range a.Overall.Ks {
		if a.Overall.Recall[k] != b.Overall.Recall[k] || a.Overall.NDCG[k] != b.Overall.NDCG[k] {
			return true
		}
	}
	return false
}

// TestEvaluateRecipeReranker: on the embedded dataset, Evaluate of a model directory whose
// recipe fuses with BM25 and reranks ranks as the same model with the fusion alone plus the
// explicit Reranker (the same cross-encoder, depth and weight), differs from the fusion alone,
// and NoRecipe is the model alone; an index exported from it records the reranker and holds
// the cross-encoder; and the model's and the index's evaluations rank as toolindex serves
// that index (the serve path).
func TestEvaluateRecipeReranker(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := 0.5
	plain, ce, model := rerankModel(t, dir, export.Recipe{Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.6}, Reranker: &export.RerankerRecipe{Depth: 3, Weight: &w}})
	if err := export.CheckCrossEncoder(filepath.Join(model, "reranker")); err != nil {
		t.Fatalf("the export's reranker/: %v", err)
	}
	hybrid := filepath.Join(dir, "hybrid") // the same model, its recipe the fusion alone
	if _, err := toolret.Export(ctx, toolret.ExportConfig{Model: model, Out: hybrid, Backend: "go",
		Recipe: &export.Recipe{Version: export.RecipeVersion, Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.6}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(hybrid, "reranker")); !os.IsNotExist(err) {
		t.Fatalf("a recipe without a reranker: reranker/ exported (%v)", err)
	}
	eval := func(cfg toolret.EvalConfig) metrics.Report {
		t.Helper()
		cfg.Backend = "go"
		rep, err := toolret.Evaluate(ctx, cfg)
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		return rep
	}
	rec := eval(toolret.EvalConfig{Model: model})
	sameMetrics(t, "recipe vs explicit Reranker", rec, eval(toolret.EvalConfig{Model: hybrid, Reranker: &toolret.ModelRerank{CrossEncoder: ce, Depth: 3, Weight: &w}}))
	if !differ(rec, eval(toolret.EvalConfig{Model: hybrid})) {
		t.Error("the recipe's reranker changes no figure: the test cannot tell it from the fusion alone")
	}
	sameMetrics(t, "NoRecipe vs the model alone", eval(toolret.EvalConfig{Model: model, NoRecipe: true}), eval(toolret.EvalConfig{Model: plain}))

	index := filepath.Join(dir, "index")
	man, err := toolret.Export(ctx, toolret.ExportConfig{Model: model, Format: export.FormatIndex, Out: index, Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if rr := man.Reranker; rr == nil || rr.Path != "reranker" || rr.Depth != 3 || rr.Weight == nil || *rr.Weight != w || man.Files["reranker/config.json"] == "" {
		t.Fatalf("index manifest reranker %+v: want reranker, 3, %g, its files listed", rr, w)
	}

	ev, err := toolret.NewEvaluation(ctx, toolret.EvalConfig{Model: model, Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	if want := "rerank 3 w0.5 (the model's recipe)"; !strings.Contains(ev.Method, want) || ev.Rerank == nil || !ev.Rerank.FromRecipe {
		t.Errorf("method %q, stage %+v: want %q", ev.Method, ev.Rerank, want)
	}
	evIndex, err := toolret.NewEvaluation(ctx, toolret.EvalConfig{Index: index, Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	defer evIndex.Close()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := toolindex.Load(index, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	qs := judged(t, ev.Data, ev.Split)[:60]
	const k = 10
	got, err := ev.Ranker.RankQueries(ctx, qs, k)
	if err != nil {
		t.Fatal(err)
	}
	gotIndex, err := evIndex.Ranker.RankQueries(ctx, qs, k)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Text
	}
	served, err := idx.RetrieveBatch(ctx, texts, k)
	if err != nil {
		t.Fatal(err)
	}
	for i := range qs {
		var want []int
		for _, r := range served[i] {
			want = append(want, ev.Data.ToolIndex[r.ToolID])
		}
		if !slices.Equal(got[i].Tools, want) || !slices.Equal(gotIndex[i].Tools, want) {
			t.Errorf("query %q: evaluated %v, the index evaluated %v, served %v", qs[i].Text, got[i].Tools, gotIndex[i].Tools, want)
		}
	}
}

// TestEvaluateRecipeRerankerLibraries: on a multi-source dataset the recipe's reranker
// reranks the top of each query's ranking within its library (metrics.WithinLibraries), not
// of the ranking over every library's tools, and says so (metrics.LibraryRanker), so that an
// evaluation asks it for the top k as a server is asked.
func TestEvaluateRecipeRerankerLibraries(t *testing.T) {
	ctx := context.Background()
	t.Setenv(data.DatasetPathEnv, datatest.Mix(t))
	const depth, spec = 2, "lens:1,mix:1"
	_, _, model := rerankModel(t, t.TempDir(), export.Recipe{Reranker: &export.RerankerRecipe{Depth: depth}})
	ev, err := toolret.NewEvaluation(ctx, toolret.EvalConfig{Data: spec, Split: "train", Model: model, Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	base, err := toolret.NewEvaluation(ctx, toolret.EvalConfig{Data: spec, Split: "train", Model: model, NoRecipe: true, Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	d, s := ev.Data, ev.Split
	if len(d.Libraries) < 2 {
		t.Fatalf("%s: %d libraries, want several", spec, len(d.Libraries))
	}
	if _, ok := ev.Ranker.(metrics.LibraryRanker); !ok {
		t.Errorf("the reranked ranker is a %T, not a metrics.LibraryRanker: an evaluation would ask its first stage for every tool, not the top k a server asks", ev.Ranker)
	}
	qs := judged(t, d, s)
	got, err := ev.Ranker.RankQueries(ctx, qs, 0)
	if err != nil {
		t.Fatal(err)
	}
	within, err := metrics.WithinLibraries(d, s, base.Ranker).RankQueries(ctx, qs, 0)
	if err != nil {
		t.Fatal(err)
	}
	anon := make([]rank.Query, len(qs)) // of no library: ranked over every tool
	for i, q := range qs {
		anon[i] = rank.Query{Index: -1, Text: q.Text}
	}
	global, err := base.Ranker.RankQueries(ctx, anon, 0)
	if err != nil {
		t.Fatal(err)
	}
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	ce, err := export.LoadCrossEncoder(filepath.Join(model, "reranker"), be)
	if err != nil {
		t.Fatal(err)
	}
	otherTop := 0
	for i, q := range qs {
		top := slices.Clone(within[i].Tools[:depth])
		score := map[int]float32{}
		for _, tool := range top {
			logits, err := ce.Score([]string{q.Text}, []string{d.Tools[tool].Text})
			if err != nil {
				t.Fatal(err)
			}
			score[tool] = export.Sigmoid(logits[0][0])
		}
		sort.SliceStable(top, func(a, b int) bool { return score[top[a]] > score[top[b]] })
		want := append(top, within[i].Tools[depth:]...)
		if !slices.Equal(got[i].Tools, want) {
			t.Errorf("query %q: %v, want %v (its library's top %d reranked)", q.Text, got[i].Tools, want, depth)
		}
		if !slices.Equal(slices.Sorted(slices.Values(global[i].Tools[:depth])), slices.Sorted(slices.Values(within[i].Tools[:depth]))) {
			otherTop++
		}
	}
	if otherTop == 0 {
		t.Error("every query's top tools are its library's: the test cannot tell within-library candidates from global ones")
	}
}

// TestEvaluateHybridLibraries: on a multi-source dataset a model whose recipe fuses with BM25
// (a fixed and an adaptive weight) ranks each query as the same model evaluated on that
// query's library alone: BM25's statistics, the normalisation and the adaptive weight's z1
// see the query's library, not the union (evaluate.IndexRanker). The other library shares the
// first's words, so that the union's ranking, cut to the library, differs.
func TestEvaluateHybridLibraries(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	datatest.Write(t, filepath.Join(root, "apps"), []string{"weather", "weather-email", "email", "email-calendar", "calendar", "calendar-maps", "maps"},
		map[string][]string{"train": {"weather:weather", "email:email", "calendar:calendar", "maps:maps", "things:email-calendar", "does:weather-email"}})
	datatest.Write(t, filepath.Join(root, "more"), []string{"weather-now", "weather-radar", "email-send", "email-read", "maps-route", "things-list"},
		map[string][]string{"train": {"radar:weather-radar", "send:email-send", "read:email-read"}})
	t.Setenv(data.DatasetPathEnv, root)
	for _, h := range []*export.HybridRecipe{
		{Fusion: "zscore", Weight: 0.5},
		{Fusion: "zscore", Weight: 1, Adaptive: &fusion.Adaptive{Base: 1.2, Slope: -0.4}},
	} {
		model := filepath.Join(t.TempDir(), "model")
		recipeModel(t, model, h)
		// rankings returns each query's ranking of its library's tools (ids without the
		// "apps:" prefix) when evaluated on spec; union: ranked over every tool, then cut.
		rankings := func(spec string, union bool) map[string][]string {
			ev, err := toolret.NewEvaluation(ctx, toolret.EvalConfig{Data: spec, Split: "train", Model: model, Backend: "go"})
			if err != nil {
				t.Fatal(err)
			}
			defer ev.Close()
			d := ev.Data
			qs := judged(t, d, ev.Split)
			ask := qs
			if union {
				ask = make([]rank.Query, len(qs))
				for i, q := range qs {
					ask[i] = rank.Query{Index: -1, Text: q.Text} // of no library: every tool
				}
			}
			rk, err := ev.Ranker.RankQueries(ctx, ask, 0)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string][]string{}
			for i, q := range qs {
				qid := strings.TrimPrefix(d.Queries[q.Index].ID, "apps:")
				for _, tool := range rk[i].Tools {
					if id := d.Tools[tool].ID; d.LibraryOf(tool) == d.QueryLibraryAny(q.Index) {
						out[qid] = append(out[qid], strings.TrimPrefix(id, "apps:"))
					}
				}
			}
			return out
		}
		both, union, alone := rankings("apps:1,more:1", false), rankings("apps:1,more:1", true), rankings("apps", false)
		tells := false
		for q, want := range alone {
			if got := both[q]; !slices.Equal(got, want) {
				t.Errorf("%s: query %s: %v within apps:1,more:1, %v on apps alone", h, q, got, want)
			}
			if !slices.Equal(union[q], want) {
				tells = true
			}
		}
		if len(alone) == 0 || !tells {
			t.Errorf("%s: the union's rankings cut to apps are apps' own for all %d queries: the test cannot tell", h, len(alone))
		}
	}
}

// TestEvaluateRerankerDev: Reranker.Dev picks the weight on the dev split a run recorded
// (SplitRun, eval -first-stage) for a model directory's first stage (its recipe's fusion):
// the weight evaluated on that split reaches the dev score reported, which no other weight
// beats; without a dev split it is refused.
func TestEvaluateRerankerDev(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, ce, model := rerankModel(t, dir, export.Recipe{Hybrid: &export.HybridRecipe{Fusion: "minmax", Weight: 0.7}})
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if err := exporttest.WriteRecordedRun(run, exporttest.Options{}, be, 2); err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	cfg := toolret.EvalConfig{Model: model, Split: "dev", SplitRun: run, Backend: "go", Reranker: &toolret.ModelRerank{CrossEncoder: ce, Depth: 3, Dev: true, MinT: &zero}}
	ev, err := toolret.NewEvaluation(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	st := ev.Rerank
	if st == nil || !st.Tuned || st.Weight == nil || st.Metric != "ndcg@5" || st.DevQueries != len(ev.Split.Judged()) || st.FromRecipe {
		t.Fatalf("rerank stage %+v: want a weight tuned on the %d dev queries", st, len(ev.Split.Judged()))
	}
	if !strings.Contains(ev.Method, "on dev") {
		t.Errorf("method %q does not say the weight was picked on dev", ev.Method)
	}
	rep, err := ev.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Report figures are percentages, the tuning's metric a fraction.
	if got := rep.Overall.NDCG[5] / 100; math.Abs(got-st.DevScore) > 1e-9 {
		t.Errorf("dev N@5 %.6f at the tuned weight %g, tuning reported %.6f", got, *st.Weight, st.DevScore)
	}
	for _, w := range []float64{0, 1} {
		c := cfg
		c.Reranker = &toolret.ModelRerank{CrossEncoder: ce, Depth: 3, Weight: &w}
		r, err := toolret.Evaluate(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Overall.NDCG[5] / 100; got > st.DevScore+1e-9 {
			t.Errorf("w %g: dev N@5 %.6f, above the tuned weight %g's %.6f", w, got, *st.Weight, st.DevScore)
		}
	}
	c := cfg
	c.Split, c.SplitRun = "test", ""
	if _, err := toolret.Evaluate(ctx, c); err == nil || !strings.Contains(err.Error(), "no split named dev") {
		t.Errorf("Dev without a dev split: %v", err)
	}
}

// TestRerankerConfigErrors: a Reranker that does not apply, or whose fields do not go
// together, is refused before anything is loaded.
func TestRerankerConfigErrors(t *testing.T) {
	w, bad := 0.5, 1.5
	for _, c := range []struct {
		cfg  toolret.EvalConfig
		want string
	}{
		{toolret.EvalConfig{Reranker: &toolret.ModelRerank{CrossEncoder: "ce"}}, "Reranker applies to a Model or an Index"},
		{toolret.EvalConfig{Model: "m", Reranker: &toolret.ModelRerank{}}, "no CrossEncoder"},
		{toolret.EvalConfig{Model: "m", Reranker: &toolret.ModelRerank{CrossEncoder: "ce", Weight: &bad}}, "-weight 1.5"},
		{toolret.EvalConfig{Model: "m", Reranker: &toolret.ModelRerank{CrossEncoder: "ce", Weight: &w, Dev: true}}, "Weight and Dev"},
		{toolret.EvalConfig{Model: "m", Reranker: &toolret.ModelRerank{CrossEncoder: "ce", Depth: -1}}, "-depth -1"},
		{toolret.EvalConfig{Model: "m", Reranker: &toolret.ModelRerank{CrossEncoder: "ce", Metric: "ndcg@5"}}, "apply to Dev"},
		{toolret.EvalConfig{Model: "m", Reranker: &toolret.ModelRerank{CrossEncoder: "ce", Dev: true, Metric: "mrr"}}, "-grid-metric"},
	} {
		if _, err := toolret.Evaluate(context.Background(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg.Reranker, err, c.want)
		}
	}
}

// TestSuiteRecipeReranker: a suite names a model whose recipe reranks with the reranker,
// "+rerank 5 w0.5", and evaluates it as Evaluate does.
func TestSuiteRecipeReranker(t *testing.T) {
	ctx := context.Background()
	dir := tinySuite(t)
	w := 0.5
	_, _, model := rerankModel(t, t.TempDir(), export.Recipe{Hybrid: &export.HybridRecipe{Fusion: "zscore", Weight: 0.6}, Reranker: &export.RerankerRecipe{Depth: 3, Weight: &w}})
	res, err := toolret.Suite(ctx, toolret.SuiteConfig{Dir: dir, Sets: []string{"bfcl"}, Backend: "go", Systems: []toolret.SuiteSystem{{Model: model}}})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Systems[len(res.Systems)-1]
	if want := "model:" + model + " (+bm25 zscore 0.6, +rerank 3 w0.5)"; got.Name != want {
		t.Errorf("name %q, want %q", got.Name, want)
	}
	rep, err := toolret.Evaluate(ctx, toolret.EvalConfig{Data: filepath.Join(dir, "bfcl"), Model: model, Backend: "go", Cutoffs: []int{1, 5, 10}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 5, 10} {
		if a, b := got.Rows[0].Result.NDCG[k], rep.Overall.NDCG[k]; a != b {
			t.Errorf("suite N@%d %.4f, Evaluate %.4f", k, a, b)
		}
	}
}

// TestExportRecipeRerankerRun: a recipe's reranker given as a cross-encoder run is exported
// in hf layout into the model directory's reranker/, scoring as the run does; a bi-encoder
// is refused.
func TestExportRecipeRerankerRun(t *testing.T) {
	ctx := context.Background()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plain, first, ceRun, out := filepath.Join(dir, "plain"), filepath.Join(dir, "first"), filepath.Join(dir, "ce-run"), filepath.Join(dir, "out")
	recipeModel(t, plain, nil)
	if err := exporttest.WriteRecordedRun(first, smallRun, be, 5); err != nil {
		t.Fatal(err)
	}
	writeCrossEncoderRun(t, ceRun, first)
	r := &export.Recipe{Version: export.RecipeVersion, Reranker: &export.RerankerRecipe{Path: export.RerankerDir, Depth: 4, Dir: ceRun}}
	if _, err := toolret.Export(ctx, toolret.ExportConfig{Model: plain, Out: out, Recipe: r, Backend: "go"}); err != nil {
		t.Fatal(err)
	}
	got, err := export.ReadRecipe(out)
	if err != nil || got.Reranker == nil || got.Reranker.Dir != filepath.Join(out, "reranker") {
		t.Fatalf("recipe %+v, %v", got, err)
	}
	exported, err := export.LoadCrossEncoder(got.Reranker.Dir, be)
	if err != nil {
		t.Fatal(err)
	}
	run, err := export.Open(ctx, ceRun, be)
	if err != nil {
		t.Fatal(err)
	}
	q, tool := []string{"convert 100 dollars to euros"}, []string{"Currency conversion between two currencies"}
	a, err := exported.Score(q, tool)
	if err != nil {
		t.Fatal(err)
	}
	b, err := run.Score(q, tool)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(a[0][0]-b[0][0])) > 1e-4 {
		t.Errorf("exported cross-encoder logit %v, the run's %v", a[0][0], b[0][0])
	}
	r.Reranker.Dir = first
	if _, err := toolret.Export(ctx, toolret.ExportConfig{Model: plain, Out: filepath.Join(dir, "refused"), Recipe: r, Backend: "go"}); err == nil || !strings.Contains(err.Error(), "not a cross-encoder") {
		t.Errorf("a bi-encoder run as the reranker: %v", err)
	}
}

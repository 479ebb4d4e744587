package toolret_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
)

// TestEvaluateEnsemble: Evaluate of an Index with an Ensemble ranks as the fused indexes
// (its figures differ from either index alone, and equal weights in either order give the
// same figures), and an Ensemble without an Index is refused.
func TestEvaluateEnsemble(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tmp := t.TempDir()
	var idx []string
	for seed := uint64(1); seed <= 2; seed++ {
		model := filepath.Join(tmp, "model", string(rune('0'+seed)))
		if err := exporttest.WriteHF(model, exporttest.Options{}, be, seed); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(tmp, "index", string(rune('0'+seed)))
		if _, err := toolret.Export(ctx, toolret.ExportConfig{Model: model, Format: export.FormatIndex, Out: out}); err != nil {
			t.Fatal(err)
		}
		idx = append(idx, out)
	}
	ndcg10 := func(cfg toolret.EvalConfig) float64 {
		t.Helper()
		rep, err := toolret.Evaluate(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Overall.NDCG[10]
	}
	a := ndcg10(toolret.EvalConfig{Index: idx[0]})
	b := ndcg10(toolret.EvalConfig{Index: idx[1]})
	ab := ndcg10(toolret.EvalConfig{Index: idx[0], Ensemble: idx[1:], EnsembleFusion: "zscore", EnsembleWeights: []float64{0.5, 0.5}})
	ba := ndcg10(toolret.EvalConfig{Index: idx[1], Ensemble: idx[:1], EnsembleFusion: "zscore", EnsembleWeights: []float64{0.5, 0.5}})
	if ab == a || ab == b {
		t.Errorf("NDCG@10: ensemble %.4f, the indexes alone %.4f and %.4f: the ensemble ranks as one of them", ab, a, b)
	}
	if ab != ba {
		t.Errorf("NDCG@10 of the equal-weight ensemble: %.4f in one order, %.4f in the other", ab, ba)
	}
	if _, err := toolret.Evaluate(ctx, toolret.EvalConfig{Ensemble: idx}); err == nil || !strings.Contains(err.Error(), "give Index") {
		t.Errorf("an Ensemble without an Index: %v", err)
	}
}

// TestEvaluateLengths: Lengths reach a Run and a Model (a short tool length changes the
// figures, a run's training lengths do not) and are refused with an Index alone.
func TestEvaluateLengths(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tmp := t.TempDir()
	run, model := filepath.Join(tmp, "run"), filepath.Join(tmp, "model")
	if err := exporttest.WriteRun(run, exporttest.Options{}, be, 5); err != nil {
		t.Fatal(err)
	}
	if err := exporttest.WriteHF(model, exporttest.Options{}, be, 1); err != nil {
		t.Fatal(err)
	}
	ndcg10 := func(cfg toolret.EvalConfig) float64 {
		t.Helper()
		cfg.Backend = "go"
		rep, err := toolret.Evaluate(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Overall.NDCG[10]
	}
	for _, cfg := range []toolret.EvalConfig{{Run: run}, {Model: model}} {
		base := ndcg10(cfg)
		if base <= 0 {
			t.Fatalf("%+v: NDCG@10 %v: the comparison is vacuous", cfg, base)
		}
		if cfg.Run != "" {
			cfg.Lengths = export.Lengths{Query: 32, Tool: 64} // its training lengths
			if got := ndcg10(cfg); got != base {
				t.Errorf("Run with its training lengths: NDCG@10 %.4f, without %.4f", got, base)
			}
		}
		cfg.Lengths = export.Lengths{Tool: 4}
		if got := ndcg10(cfg); got == base {
			t.Errorf("%+v: NDCG@10 %.4f as without Lengths", cfg, got)
		}
	}
	if _, err := toolret.Evaluate(ctx, toolret.EvalConfig{Index: model, Lengths: export.Lengths{Tool: 8}}); err == nil || !strings.Contains(err.Error(), "Lengths apply") {
		t.Errorf("Lengths with an Index: %v", err)
	}
}

// TestEvaluateFuse: RRF of BM25 with itself ranks as BM25, and Fuse is refused with Run and
// with weights that do not fit it.
func TestEvaluateFuse(t *testing.T) {
	ctx := context.Background()
	bm25, err := toolret.Evaluate(ctx, toolret.EvalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	fused, err := toolret.Evaluate(ctx, toolret.EvalConfig{Fuse: []string{"bm25", "bm25"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range bm25.Overall.Ks {
		if a, b := bm25.Overall.Recall[k], fused.Overall.Recall[k]; a != b {
			t.Errorf("R@%d: BM25 %.4f, rrf(BM25, BM25) %.4f", k, a, b)
		}
	}
	for _, c := range []struct {
		cfg  toolret.EvalConfig
		want string
	}{
		{toolret.EvalConfig{Run: "r", Fuse: []string{"bm25"}}, "one of Run, Model, Index and Fuse"},
		{toolret.EvalConfig{Fuse: []string{"bm25", "bm25"}, Fusion: "zscore", FusionWeights: []float64{1}}, "1 FusionWeights for 2 Fuse entries"},
		{toolret.EvalConfig{Fuse: []string{"bm25", "trec.txt"}}, `Fuse entry "trec.txt"`},
		{toolret.EvalConfig{Fusion: "rrf"}, "apply to Fuse"},
	} {
		if _, err := toolret.Evaluate(ctx, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
}

package toolindex_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/models/refiner"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/toolindex"
)

// classifierLogits returns the logits of the classifier run for each text, computed by the
// classifier's own graph (classifier.Config.Logits: encoder, head pooling, linear head).
func classifierLogits(t *testing.T, run string, be compute.Backend, texts []string) [][]float32 {
	t.Helper()
	m, err := classifier.LoadRun(run, be)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := model.NewExec(be, m.Store, func(root *model.Scope, ids, mask *Node) *Node {
		return m.Cfg.Logits(root, ids, nil, mask)
	})
	if err != nil {
		t.Fatal(err)
	}
	ex := encoder.Guard(exec)
	seqs := make([][]int32, len(texts))
	for i, s := range texts {
		seqs[i] = m.Tok.Single(s, m.Cfg.MaxLen)
	}
	out, err := encoder.Map(m.Tok, seqs, nil, m.Cfg.MaxLen, 64, func(ids, _, mask *tensors.Tensor) (*tensors.Tensor, error) {
		return ex.Call1(ids, mask)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mlcRanker is the classifier run's own ranking (classifier.Ranker: by its probabilities).
func mlcRanker(t *testing.T, run string, be compute.Backend, d *data.Dataset) *classifier.Ranker {
	t.Helper()
	m, err := classifier.LoadRun(run, be)
	if err != nil {
		t.Fatal(err)
	}
	r, err := classifier.NewRanker(m, d)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func testQueries(t *testing.T, d *data.Dataset, n int) []string {
	t.Helper()
	ts, err := d.Split("test")
	if err != nil {
		t.Fatal(err)
	}
	var qs []string
	for _, q := range ts.Judged()[:n] {
		qs = append(qs, d.Queries[q].Text)
	}
	return qs
}

// exportMLC writes a tiny MLC classifier run and its index over the embedded dataset.
func exportMLC(t *testing.T, dir string, o exporttest.ClassifierOptions, be compute.Backend, seed uint64) (run, index string, man *export.Manifest) {
	t.Helper()
	run, index = filepath.Join(dir, "mlc"), filepath.Join(dir, "index")
	if err := exporttest.WriteClassifierRun(run, o, be, seed); err != nil {
		t.Fatal(err)
	}
	man, err := exporttest.IndexRun(run, index, "", be)
	if err != nil {
		t.Fatal(err)
	}
	return run, index, man
}

// TestMLCIndex exports tiny MLC classifiers (bce and softmax losses, [CLS] and pooler heads)
// as indexes: toolindex.Load returns the classifier's own logits for every tool (within
// 1e-5) and its own top-k order, which the bias changes (ranking without it differs).
func TestMLCIndex(t *testing.T) {
	be, d := exporttest.GoDefault(t)
	queries := testQueries(t, d, 12)
	ctx := context.Background()
	for i, c := range []struct {
		name       string
		o          exporttest.ClassifierOptions
		activation string
	}{
		{"bce cls", exporttest.ClassifierOptions{}, "sigmoid"},
		{"softmax cls", exporttest.ClassifierOptions{Loss: "softmax"}, "softmax"},
		{"bce pooler", exporttest.ClassifierOptions{Pooling: encoder.PoolPooler}, "sigmoid"},
		{"softmax mean", exporttest.ClassifierOptions{Loss: "softmax", Pooling: encoder.PoolMean}, "softmax"},
	} {
		t.Run(c.name, func(t *testing.T) {
			run, index, man := exportMLC(t, t.TempDir(), c.o, be, uint64(20+i))
			pool := string(c.o.Pooling)
			if pool == "" {
				pool = "cls"
			}
			if man.Stage() != export.FirstStageMLC || man.MLC == nil || man.MLC.Activation != c.activation || man.MLC.Pooling != pool ||
				man.MLC.Labels != len(d.Tools) || man.MLC.Bias != export.IndexBias || man.Kind != export.KindClassifier || man.Tools != len(d.Tools) {
				t.Fatalf("manifest: first stage %q, kind %s, %d tools, mlc %+v", man.FirstStage, man.Kind, man.Tools, man.MLC)
			}
			if _, ok := man.Towers["tool"]; ok || man.Labels != nil {
				t.Fatalf("manifest towers %v, labels %d: want no tool tower, no labels list", man.Towers, len(man.Labels))
			}
			r, err := toolindex.Load(index, toolindex.WithBackend(be))
			if err != nil {
				t.Fatal(err)
			}
			if r.FirstStage() != export.FirstStageMLC || len(r.Library().Bias()) != len(d.Tools) {
				t.Fatalf("first stage %q, %d biases", r.FirstStage(), len(r.Library().Bias()))
			}
			logits := classifierLogits(t, run, be, queries)
			all, err := r.RetrieveBatch(ctx, queries, len(d.Tools))
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for i, res := range all {
				if len(res) != len(d.Tools) {
					t.Fatalf("query %d: %d results, want every tool", i, len(res))
				}
				for j, x := range res {
					worst = max(worst, math.Abs(float64(x.RetrievalScore-logits[i][x.Index])))
					if x.Score != x.RetrievalScore || x.ToolID != d.Tools[x.Index].ID || (j > 0 && x.Score > res[j-1].Score) {
						t.Fatalf("query %d result %d: %+v (previous score %v)", i, j, x, res[j-1].Score)
					}
				}
			}
			if worst > 1e-5 {
				t.Errorf("scores differ from the classifier's logits by up to %g", worst)
			}
			const k = 10
			want, err := mlcRanker(t, run, be, d).Rank(ctx, queries, k)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.RetrieveBatch(ctx, queries, k)
			if err != nil {
				t.Fatal(err)
			}
			m, err := export.LoadModel(run, be)
			if err != nil {
				t.Fatal(err)
			}
			noBias, distinct := 0, map[string]bool{}
			for i := range queries {
				gi := indexes(got[i])
				if !slices.Equal(gi, want[i].Tools) {
					t.Errorf("query %q: index top %d %v, classifier %v", queries[i], k, gi, want[i].Tools)
				}
				// The ranking without the bias (labels are the dataset's tools, in order).
				wb := make([]float32, len(d.Tools))
				for j := range wb {
					wb[j] = logits[i][j] - m.Head.Bias[j]
				}
				if !slices.Equal(rank.TopK(wb, k).Tools, want[i].Tools) {
					noBias++
				}
				distinct[strings.Join(ids(got[i]), " ")] = true
			}
			if noBias == 0 {
				t.Errorf("the bias changed none of %d rankings: the test cannot tell an index without it", len(queries))
			}
			if len(distinct) < 2 {
				t.Errorf("every query has the same top %d: the test cannot tell the query tower", k)
			}
		})
	}
}

// TestMLCLibrary: an MLC index's tools are its labels: adding tools is refused (Library.With,
// CanEmbedTools), removing them keeps every other tool's score (its bias moves with its row),
// and usage vectors are refused.
func TestMLCLibrary(t *testing.T) {
	be, d := exporttest.GoDefault(t)
	_, index, _ := exportMLC(t, t.TempDir(), exporttest.ClassifierOptions{}, be, 31)
	r, err := toolindex.Load(index, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CanEmbedTools(); !errors.Is(err, toolindex.ErrMLCTools) {
		t.Errorf("CanEmbedTools: %v, want ErrMLCTools", err)
	}
	lib := r.Library()
	if _, err := lib.With(1, []export.ToolRecord{{ID: "new", Text: "a new tool"}}, [][]float32{lib.Embedding(0)}, nil); !errors.Is(err, toolindex.ErrMLCTools) ||
		!strings.Contains(err.Error(), "retrain to add tools") {
		t.Errorf("With(put): %v, want ErrMLCTools", err)
	}
	if _, err := lib.With(1, []export.ToolRecord{lib.Tool(3)}, [][]float32{lib.Embedding(3)}, nil); !errors.Is(err, toolindex.ErrMLCTools) {
		t.Errorf("With(put an existing tool): %v, want ErrMLCTools", err)
	}
	ctx := context.Background()
	q := testQueries(t, d, 1)[0]
	before, err := r.Retrieve(ctx, q, 12)
	if err != nil {
		t.Fatal(err)
	}
	// Remove the best tool and an early one (every later row moves up).
	gone := []string{before[0].ToolID, d.Tools[0].ID}
	lib2, err := lib.With(1, nil, nil, gone)
	if err != nil {
		t.Fatal(err)
	}
	if lib2.Len() != lib.Len()-2 || len(lib2.Bias()) != lib2.Len() {
		t.Fatalf("after removing 2 tools: %d tools, %d biases (was %d)", lib2.Len(), len(lib2.Bias()), lib.Len())
	}
	if err := r.SetLibrary(lib2); err != nil {
		t.Fatal(err)
	}
	after, err := r.Retrieve(ctx, q, 10)
	if err != nil {
		t.Fatal(err)
	}
	var want []toolindex.Result
	for _, x := range before {
		if !slices.Contains(gone, x.ToolID) {
			want = append(want, x)
		}
	}
	for j, x := range after {
		if x.ToolID != want[j].ToolID || x.Score != want[j].Score {
			t.Errorf("result %d after removal: %s %v, want %s %v", j, x.ToolID, x.Score, want[j].ToolID, want[j].Score)
		}
	}
	if _, err := toolindex.Load(index, toolindex.WithToolVectors("usage"), toolindex.WithBackend(be)); err == nil || !strings.Contains(err.Error(), "is from an MLC classifier") {
		t.Errorf("usage vectors of an MLC index: %v", err)
	}
	// A damaged index: the manifest names a bias tools.safetensors lacks.
	tools, flat, dim, _, err := export.ReadIndexFiles(index)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([][]float32, len(tools))
	for i := range rows {
		rows[i] = flat[i*dim : (i+1)*dim]
	}
	if err := export.WriteIndexFilesBias(index, tools, rows, make([]float32, len(tools)-1), nil); err == nil {
		t.Error("WriteIndexFilesBias accepted a bias per tool but one")
	}
	if err := export.WriteIndexFiles(index, tools, rows, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := toolindex.Load(index, toolindex.WithoutVerify(), toolindex.WithBackend(be)); err == nil || !strings.Contains(err.Error(), `manifest mlc.bias "bias"`) {
		t.Errorf("MLC index without its bias: %v", err)
	}
}

// TestMLCIndexRefusals: an MLC index holds exactly the classifier's labels (a tool of the
// data that is not a label, or a label not in the data, is named), of an mlc classifier only,
// with a pooling its query tower can express. A failed export leaves nothing.
func TestMLCIndexRefusals(t *testing.T) {
	be, d := exporttest.GoDefault(t)
	tmp := t.TempDir()
	write := func(name string, o exporttest.ClassifierOptions) *export.Model {
		t.Helper()
		run := filepath.Join(tmp, name)
		if err := exporttest.WriteClassifierRun(run, o, be, 5); err != nil {
			t.Fatal(err)
		}
		m, err := export.LoadModel(run, be)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	mlc := write("mlc", exporttest.ClassifierOptions{})
	renamed := *d
	renamed.Tools = slices.Clone(d.Tools)
	renamed.Tools[4].ID = "renamed-tool"
	short := *d
	short.Tools = d.Tools[:len(d.Tools)-1]
	for _, c := range []struct {
		name string
		m    *export.Model
		d    *data.Dataset
		want string
	}{
		{"tool not a label", mlc, &renamed, `tool "renamed-tool" of renamed-data is not a label of MLC classifier`},
		{"label not a tool", mlc, &short, `label "` + d.Tools[len(d.Tools)-1].ID + `" of MLC classifier`},
		{"querytype", write("qt", exporttest.ClassifierOptions{Kind: classifier.KindQueryType}), d, "is a querytype classifier"},
		{"deberta pooler", write("deberta", exporttest.ClassifierOptions{Arch: "deberta-v2", Pooling: encoder.PoolPooler}), d, `reads its deberta-v2 encoder's pooler (head pooling "pooler")`},
	} {
		out := filepath.Join(tmp, "out-"+strings.ReplaceAll(c.name, " ", "-"))
		_, err := export.Export(c.m, export.Options{Format: export.FormatIndex, Out: out, Data: c.d, DataSource: "renamed-data"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: a failed export left %s", c.name, out)
		}
	}
	// A DeBERTa MLC over [CLS] is exportable.
	if _, err := export.Export(write("deberta-cls", exporttest.ClassifierOptions{Arch: "deberta-v2"}), export.Options{Format: export.FormatIndex, Out: filepath.Join(tmp, "deberta-cls-index")}); err != nil {
		t.Errorf("DeBERTa MLC with a [CLS] head: %v", err)
	}
}

// TestMLCRefinerStage: an MLC index packaging a refiner over the MLC's candidates (with a
// first-stage weight, which mixes in the classifier's probabilities) serves exactly what
// refiner.LoadPipeline (the classifier's own ranking, then the refiner) gives for the same
// queries, at k below, at and above N, for a sigmoid and a softmax classifier. Refiners and
// indexes of the other first stage are refused, naming both.
func TestMLCRefinerStage(t *testing.T) {
	if testing.Short() {
		t.Skip("trains refiners")
	}
	be, d := exporttest.GoDefault(t)
	tmp := t.TempDir()
	beRun := filepath.Join(tmp, "be")
	if err := exporttest.WriteRecordedRun(beRun, exporttest.Options{}, be, 3); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	queries := testQueries(t, d, 60)
	type fixture struct{ mlcRun, ref, index string }
	var fx []fixture
	for i, loss := range []string{"bce", "softmax"} {
		f := fixture{mlcRun: filepath.Join(tmp, "mlc-"+loss), ref: filepath.Join(tmp, "ref-"+loss), index: filepath.Join(tmp, "index-"+loss)}
		if err := exporttest.WriteClassifierRun(f.mlcRun, exporttest.ClassifierOptions{Loss: loss}, be, uint64(40+i)); err != nil {
			t.Fatal(err)
		}
		if err := exporttest.WriteRefinerRun(f.ref, beRun, exporttest.RefinerOptions{Candidates: "mlc", CandidatesRun: f.mlcRun, N: 6}, be, 5); err != nil {
			t.Fatal(err)
		}
		if err := rundir.WriteJSON(f.ref, refiner.WeightFile, refiner.Weight{FirstStageWeight: 0.6, Metric: "ndcg@5"}); err != nil {
			t.Fatal(err)
		}
		man, err := exporttest.IndexRun(f.mlcRun, f.index, f.ref, be)
		if err != nil {
			t.Fatal(err)
		}
		if man.Refiner == nil || man.Refiner.Candidates != "mlc" || man.Refiner.N != 6 {
			t.Fatalf("manifest refiner entry %+v", man.Refiner)
		}
		fx = append(fx, f)
	}
	for _, f := range fx {
		t.Run(filepath.Base(f.mlcRun), func(t *testing.T) {
			r, err := toolindex.Load(f.index, toolindex.WithBackend(be))
			if err != nil {
				t.Fatal(err)
			}
			if _, kind, n := r.Refiner(); kind != "mlc" || n != 6 {
				t.Fatalf("refiner %s, N %d", kind, n)
			}
			first, err := toolindex.Load(f.index, toolindex.WithoutRefiner(), toolindex.WithBackend(be))
			if err != nil {
				t.Fatal(err)
			}
			p, err := refiner.LoadPipeline(f.ref, d, be)
			if err != nil {
				t.Fatal(err)
			}
			if p.Refiner.Cfg.FirstStageWeight != 0.6 {
				t.Fatalf("pipeline first-stage weight %v", p.Refiner.Cfg.FirstStageWeight)
			}
			changed := 0
			for _, k := range []int{3, 6, 15} {
				want, err := p.Rank(ctx, queries, k)
				if err != nil {
					t.Fatal(err)
				}
				got, err := r.RetrieveBatch(ctx, queries, k)
				if err != nil {
					t.Fatal(err)
				}
				plain, err := first.RetrieveBatch(ctx, queries, k)
				if err != nil {
					t.Fatal(err)
				}
				for q := range want {
					gi := indexes(got[q])
					if !slices.Equal(gi, want[q].Tools) {
						t.Fatalf("k %d, query %q: retriever %v, pipeline %v", k, queries[q], gi, want[q].Tools)
					}
					for j, x := range got[q] {
						if e := math.Abs(float64(x.Score - want[q].Scores[j])); e > 1e-4 {
							t.Errorf("k %d, query %d, result %d: score %v, pipeline %v", k, q, j, x.Score, want[q].Scores[j])
						}
					}
					if !slices.Equal(gi, indexes(plain[q])) {
						changed++
					}
				}
			}
			if changed == 0 {
				t.Errorf("the refiner changed no ranking of %d queries", len(queries))
			}
			// The classifier's probabilities matter: mixing its logits instead gives other
			// scores (z of sigmoid or exp(logit) is not z of the logit).
			m, err := refiner.LoadRun(f.ref, be)
			if err != nil {
				t.Fatal(err)
			}
			lp := &refiner.Pipeline{First: firstStage{first}, Refiner: m} // first stage: logits
			byLogit, err := lp.Rank(ctx, queries, 6)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.RetrieveBatch(ctx, queries, 6)
			if err != nil {
				t.Fatal(err)
			}
			differ := 0
			for q := range got {
				for j, x := range got[q] {
					if math.Abs(float64(x.Score-byLogit[q].Scores[j])) > 1e-3 {
						differ++
						break
					}
				}
			}
			if differ == 0 {
				t.Errorf("mixing logits instead of the classifier's probabilities changes no score of %d queries: the test cannot tell them", len(queries))
			}
		})
	}

	t.Run("refusals", func(t *testing.T) {
		beRef, beIndex := filepath.Join(tmp, "ref-be"), filepath.Join(tmp, "index-be")
		if err := exporttest.WriteRefinerRun(beRef, beRun, exporttest.RefinerOptions{N: 4}, be, 7); err != nil {
			t.Fatal(err)
		}
		m, err := export.LoadModel(beRun, be)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := exporttest.IndexRun(beRun, beIndex, "", be); err != nil {
			t.Fatal(err)
		}
		mlc := fx[0]
		for _, c := range []struct {
			name, index string
			opts        []toolindex.Option
			want        []string
		}{
			{"bi-encoder refiner on an MLC index", mlc.index, []toolindex.Option{toolindex.WithRefiner(beRef)},
				[]string{"re-orders bi-encoder candidates", "exported from " + mlc.mlcRun, "needs an index of a bi-encoder", "first stage is an MLC classifier"}},
			{"mlc refiner on a bi-encoder index", beIndex, []toolindex.Option{toolindex.WithRefiner(mlc.ref)},
				[]string{"re-orders mlc candidates (first stage mlc " + mlc.mlcRun, "needs an index of an MLC classifier", "first stage is a bi-encoder"}},
			{"refiner of another MLC", mlc.index, []toolindex.Option{toolindex.WithRefiner(fx[1].ref)},
				[]string{"re-orders the candidates of " + fx[1].mlcRun}},
			{"usage vectors", mlc.index, []toolindex.Option{toolindex.WithToolVectors("usage")}, []string{"is from an MLC classifier"}},
		} {
			_, err := toolindex.Load(c.index, append(c.opts, toolindex.WithBackend(be))...)
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %v, want one containing %q", c.name, err, w)
				}
			}
		}
		// The same pairings are refused at export.
		mm, err := export.LoadModel(mlc.mlcRun, be)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			m    *export.Model
			ref  string
			want string
		}{
			{"bi-encoder refiner, MLC run", mm, beRef, "first stage is an MLC classifier"},
			{"mlc refiner, bi-encoder run", m, mlc.ref, "first stage is a bi-encoder"},
			{"refiner of another MLC", mm, fx[1].ref, "re-orders the candidates of " + fx[1].mlcRun},
		} {
			out := filepath.Join(tmp, "bad-"+strings.ReplaceAll(c.name, " ", "-"))
			_, err := export.Export(c.m, export.Options{Format: export.FormatIndex, Out: out, Data: d, DataSource: "default", Refiner: c.ref})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("export %s: %v, want an error containing %q", c.name, err, c.want)
			}
		}
	})
}

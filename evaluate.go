package toolret

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/evaluate"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rank/bm25"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/toolindex"
)

// EvalConfig configures Evaluate. Give at most one of Run, Model and Index; with none, BM25
// over the tool texts is evaluated.
type EvalConfig struct {
	// Data is the dataset directory (BEIR or Parquet layout; "": the embedded default dataset).
	Data string
	// Holdout evaluates on a held-out-tool view of Data; nil: the view Run was trained on
	// (recorded in its run.json), else the dataset's own splits.
	Holdout *data.Holdout
	// Split is the split evaluated (default "test").
	Split string
	// Run is a trained run (any kind the evaluate package loads) or one of its checkpoints.
	Run string
	// Model is a pre-trained model (HF or sentence-transformers directory, or hub id),
	// evaluated zero-shot: its index over Data's tools is built in a temporary directory.
	Model string
	// Index is an exported index over Data's tools.
	Index string
	// Backend names the compute backend (backend.Open).
	Backend string
	// Quantize runs Model's or Index's encoder with int8 weights (export.QuantInt8, on Backend
	// onnx; toolindex.WithQuantization); a trained Run is refused (export it with -format hf).
	Quantize export.Quantization
	// Ensemble fuses Index with more exported indexes over the same tools, as ServeConfig's
	// Ensemble, EnsembleFusion and EnsembleWeights serve them (toolindex.WithEnsemble).
	Ensemble        []string
	EnsembleFusion  string
	EnsembleWeights []float64
	// Cutoffs are the K of Recall/NDCG/COMP@K (default 1, 3, 5, 10).
	Cutoffs []int
	// Lengths replace a bi-encoder Run's training lengths or a Model's max_seq_length (0: keep;
	// eval -query-len, -tool-len); an Index embeds with the lengths it was exported with.
	Lengths export.Lengths
}

// Evaluate ranks the queries of cfg.Split with what cfg names and returns the metrics: overall,
// by number of relevant tools, and tool-level recall of seen and unseen tools.
func Evaluate(ctx context.Context, cfg EvalConfig) (metrics.Report, error) {
	var none metrics.Report
	if n := count(cfg.Run != "", cfg.Model != "", cfg.Index != ""); n > 1 {
		return none, errors.New("evaluate: give one of Run, Model and Index")
	}
	if cfg.Split == "" {
		cfg.Split = "test"
	}
	if len(cfg.Cutoffs) == 0 {
		cfg.Cutoffs = []int{1, 3, 5, 10}
	}
	h := cfg.Holdout
	if h == nil && cfg.Run != "" {
		if m, err := rundir.Read(rundir.RunOf(cfg.Run)); err == nil {
			h = m.Split.Holdout
		}
	}
	d, err := data.Open(cfg.Data, h)
	if err != nil {
		return none, err
	}
	s, err := d.Split(cfg.Split)
	if err != nil {
		return none, err
	}
	be, err := backend.Open(backend.Name(cfg.Backend))
	if err != nil {
		return none, err
	}
	if _, err := export.ParseQuantization(string(cfg.Quantize)); err != nil {
		return none, err
	}
	if len(cfg.Ensemble) > 0 && cfg.Index == "" {
		return none, errors.New("evaluate: Ensemble fuses an Index with more indexes: give Index")
	}
	if cfg.Quantize != export.QuantDefault && cfg.Model == "" && cfg.Index == "" {
		return none, fmt.Errorf("evaluate: Quantize applies to a Model or an Index (export a run with -format hf first)")
	}
	if (cfg.Lengths != export.Lengths{}) && cfg.Run == "" && cfg.Model == "" {
		return none, errors.New("evaluate: Lengths apply to a Run or a Model (export an Index with them)")
	}
	var r rank.QueryRanker
	switch {
	case cfg.Run != "":
		o := evaluate.RunOptions{Backend: be, Vectors: "text", QueryLen: cfg.Lengths.Query, ToolLen: cfg.Lengths.Tool}
		if r, _, err = evaluate.LoadRun(cfg.Run, d, o); err != nil {
			return none, err
		}
	case cfg.Model != "":
		m, err := export.Open(ctx, cfg.Model, be)
		if err != nil {
			return none, err
		}
		if err := cfg.Lengths.Apply(m); err != nil {
			return none, err
		}
		if err := m.Quantize(cfg.Quantize); err != nil {
			return none, err
		}
		tmp, err := os.MkdirTemp("", "toolret-eval-")
		if err != nil {
			return none, err
		}
		defer os.RemoveAll(tmp)
		cfg.Index = filepath.Join(tmp, "index")
		if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: cfg.Index, Data: d, DataSource: cfg.Data, Source: cfg.Model}); err != nil {
			return none, err
		}
		fallthrough
	case cfg.Index != "":
		opts := []toolindex.Option{toolindex.WithBackend(be), toolindex.WithQuantization(cfg.Quantize)}
		if len(cfg.Ensemble) > 0 || cfg.EnsembleFusion != "" {
			opts = append(opts, toolindex.WithEnsemble(cfg.EnsembleFusion, cfg.Ensemble, cfg.EnsembleWeights))
		}
		idx, err := toolindex.Load(cfg.Index, opts...)
		if err != nil {
			return none, fmt.Errorf("index %s: %w", cfg.Index, err)
		}
		r = evaluate.IndexRanker(idx, d)
	default:
		docs := make([]string, len(d.Tools))
		for i, t := range d.Tools {
			docs[i] = t.Text
		}
		r = rank.Texts(bm25.New(docs, bm25.DefaultParams))
	}
	return metrics.EvaluateSplit(ctx, d, s, r, cfg.Cutoffs)
}

func count(b ...bool) int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}

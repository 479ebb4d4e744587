package crossencoder

import (
	"context"
	"fmt"
	"time"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/runs"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/train"
)

// TrainConfig is the recipe of `train crossencoder`, ToolRerank's cross-encoder reranker
// trained on the hard negatives of a bi-encoder run: every flag of the command as a field
// (the shared ones in runs.Head) whose json tag is the flag's name and whose help tag its
// help. DefaultTrainConfig holds the defaults.
type TrainConfig struct {
	runs.Head
	Depth     int    `json:"depth" help:"hard negatives are drawn from the retriever's top -depth tools (also the dev reranking depth; the paper's m)"`                       // -depth: hard negatives come from the retriever's top Depth tools, also the dev and test reranking depth (default 30)
	Negatives int    `json:"negatives-per-positive" help:"negatives per positive pair"`                                                                                       // -negatives-per-positive: negatives per positive pair (default 7)
	Loss      string `json:"loss" help:"listwise (softmax CE over the positive and its negatives) or bce (per pair)"`                                                         // -loss: listwise (softmax CE over the positive and its negatives; default) or bce (per pair)
	DevMax    int    `json:"dev-max" help:"evaluate on at most this many dev queries during training (0: all; on a multi-source dataset taken evenly through its dev split)"` // -dev-max: evaluate on at most this many dev queries during training (default 0: all)
	// Data is the dataset (nil: the embedded default dataset).
	Data *data.Dataset `json:"-"`
	// Args is provenance only: the command's flags as recorded in a new run's run.json.
	Args map[string]string `json:"-"`
}

// DefaultTrainConfig returns the command's defaults: max length 128, batch 8, 4 epochs,
// ndcg@5, and a warm start from the retriever's encoder (a cross-encoder from random weights
// learns no query-tool matching in these budgets).
func DefaultTrainConfig() TrainConfig {
	h := runs.DefaultHead(128, 8, 4, "ndcg@5")
	h.WarmStart = true
	return TrainConfig{Head: h, Depth: 30, Negatives: 7, Loss: LossListwise}
}

// Result is what Train did: the run directory, the trainer's summary and, with a test split,
// the test report of reranking the retriever's top Depth.
type Result struct {
	RunDir  string
	Summary *train.Summary
	Test    *metrics.Report
}

// Validate checks c (not the run directory or data).
func (c *TrainConfig) Validate() error {
	if c.Retriever == "" {
		if c.Resume { // a resumed run records its -first-stage
			return fmt.Errorf("resume %s: the run records no -first-stage", c.RunDir)
		}
		return fmt.Errorf("crossencoder needs -first-stage RUN (a trained bi-encoder: hard negatives and dev candidates)")
	}
	if err := check.First(check.Positive("depth", c.Depth), check.Positive("negatives-per-positive", c.Negatives), check.NonNegative("dev-max", c.DevMax),
		runs.CheckMaxLen(c.MaxLen, 3, "[CLS], [SEP], [SEP]"), metrics.CheckDevMetric(c.Metric)); err != nil {
		return err
	}
	if c.Loss != LossBCE && c.Loss != LossListwise {
		return fmt.Errorf("-loss %q: want bce or listwise", c.Loss)
	}
	if err := runs.CheckPooling(c.Pooling); err != nil {
		return err
	}
	if c.Pooling == string(encoder.PoolMean) {
		return fmt.Errorf("-pooling %q: a cross-encoder's head reads the pair's first token: want cls or pooler", c.Pooling)
	}
	return c.Head.Check()
}

// Train trains a cross-encoder into cfg.RunDir (or resumes it): hard negatives from the
// -first-stage run's top Depth, its recorded dev split; then, unless cfg.Test is empty,
// evaluates reranking the retriever's top Depth of the test queries, prints the report and
// writes test_metrics.json.
func Train(ctx context.Context, cfg TrainConfig) (*Result, error) {
	d, s, err := runs.Begin(&cfg, &cfg.Head, "crossencoder", cfg.Data, cfg.Args)
	if err != nil {
		return nil, err
	}
	bk, tr, dev := s.Backend, s.Train, s.Dev
	store := s.Store()
	mc, tok, err := runs.Model(s, store, ConfigFile, Unmarshal, true, func(bc encoder.Config) *Config {
		pool, bc := classifier.HeadPoolingOf(bc, cfg.Pooling)
		return &Config{Encoder: bc, MaxLen: cfg.MaxLen, LossKind: cfg.Loss, Pooling: pool}
	})
	if err != nil {
		return nil, err
	}
	files, err := s.ModelFiles(ConfigFile, mc, tok)
	if err != nil {
		return nil, err
	}
	evalDev := dev
	if cfg.DevMax > 0 && len(dev.Queries) > cfg.DevMax {
		evalDev = &data.Split{Name: dev.Name, Queries: DevSample(dev.Queries, cfg.DevMax, len(d.Libraries) > 1), Relevant: dev.Relevant}
	}
	start := time.Now()
	cands, err := TopTools(cfg.Retriever, bk, d, append(append([]int(nil), tr.Queries...), evalDev.Queries...), cfg.Depth)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(s.Log, "retriever top-%d for %d queries in %.0fs\n", cfg.Depth, len(cands), time.Since(start).Seconds())
	task := &Task{Cfg: mc, Data: d, Train: tr, Dev: evalDev, Tok: tok, Candidates: cands, Negatives: cfg.Negatives,
		BatchSize: cfg.Batch, Backend: bk, Seed: cfg.Seed, ExtraFiles: files}
	if err := task.Prepare(); err != nil {
		return nil, err
	}
	tc, steps := s.TrainConfig(task, classifier.HeadVars...)
	fmt.Fprintf(s.Log, "%s\ncross-encoder: %s, %d layers, hidden %d, vocab %d, max len %d, %s head, %s loss, %d train pairs x (1+%d), %d dev queries, %d steps -> %s\n",
		d.Stats(), mc.Encoder.ModelType(), mc.Encoder.Layers(), mc.Encoder.Hidden(), mc.Encoder.Vocab(), mc.MaxLen, classifier.HeadPooling(mc.Pooling), mc.LossKind, len(tr.Pairs()), cfg.Negatives, len(evalDev.Queries), steps, cfg.RunDir)
	sum, err := s.Run(store, task, tc)
	if err != nil {
		return nil, err
	}
	res := &Result{RunDir: cfg.RunDir, Summary: sum}
	if cfg.Test == "" {
		return res, nil
	}
	ts, err := d.Split(cfg.Test)
	if err != nil {
		return nil, err
	}
	texts := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		texts[i] = t.Text
	}
	mod, err := LoadRun(cfg.RunDir, bk, texts)
	if err != nil {
		return nil, err
	}
	tc2, err := TopTools(cfg.Retriever, bk, d, ts.Judged(), cfg.Depth)
	if err != nil {
		return nil, err
	}
	rep, err := metrics.EvaluateSplit(ctx, d, ts, Reranker(mod, rank.Fixed(tc2), 0), metrics.DefaultKs)
	if err != nil {
		return nil, err
	}
	rep.Dataset = fmt.Sprintf("%s (cross-encoder reranking of the retriever's top %d)", d.Name, cfg.Depth)
	fmt.Fprint(s.Out, rep)
	res.Test = &rep
	return res, rundir.WriteJSON(cfg.RunDir, "test_metrics.json", map[string]any{fmt.Sprintf("rerank-%d", cfg.Depth): rep})
}

// DevSample returns the first n of the dev queries, or with spread n of them taken at even
// steps through the list, so that a multi-source dataset's dev split, whose queries come
// library after library, keeps every library's share.
func DevSample(queries []int, n int, spread bool) []int {
	if n <= 0 || n >= len(queries) {
		return queries
	}
	if !spread {
		return queries[:n]
	}
	out := make([]int, n)
	for i := range n {
		out[i] = queries[i*len(queries)/n]
	}
	return out
}

// TopTools ranks the given queries of d with the bi-encoder run at run and returns each
// one's top m tools, best first. On a multi-source dataset (d.Libraries) each query is ranked
// within its own library (metrics.WithinLibraries): its hard negatives and the candidates
// reranked at evaluation are tools of that library only.
func TopTools(run string, bk compute.Backend, d *data.Dataset, queries []int, m int) (map[int][]int, error) {
	emb, err := biencoder.LoadRun(run, bk)
	if err != nil {
		return nil, err
	}
	r, err := emb.Ranker(d, "text", "")
	if err != nil {
		return nil, err
	}
	qr := metrics.WithinLibraries(d, nil, rank.Texts(r))
	out := make(map[int][]int, len(queries))
	const chunk = 1024 // within libraries ranks every tool first: bound the rankings held
	for lo := 0; lo < len(queries); lo += chunk {
		part := queries[lo:min(lo+chunk, len(queries))]
		qs := make([]rank.Query, len(part))
		for i, q := range part {
			qs[i] = rank.Query{Index: q, Text: d.Queries[q].Text}
		}
		rk, err := qr.RankQueries(context.Background(), qs, m)
		if err != nil {
			return nil, fmt.Errorf("crossencoder: first stage %s: %w", run, err)
		}
		for i, q := range part {
			out[q] = rk[i].Tools
		}
	}
	return out, nil
}

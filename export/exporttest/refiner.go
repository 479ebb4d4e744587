package exporttest

import (
	"context"
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/candidates"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/models/refiner"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/train"
)

// WriteRecordedRun is WriteRun plus the run.json train biencoder records: kind biencoder, the
// embedded dataset's fingerprint and a dev split carved from its train split (10%, seed 1).
func WriteRecordedRun(runDir string, o Options, be compute.Backend, seed uint64) error {
	if err := WriteRun(runDir, o, be, seed); err != nil {
		return err
	}
	d, err := data.Default()
	if err != nil {
		return err
	}
	sp, _, _, err := rundir.Carve(d, "train", 0.1, 1)
	if err != nil {
		return err
	}
	return rundir.Create(runDir, &rundir.Meta{Kind: "biencoder", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp})
}

// RefinerOptions shape a tiny refiner run.
type RefinerOptions struct {
	// Candidates is the first stage recorded in the run: bi-encoder (default), usage, bm25 or
	// mlc. Its training lists come from that first stage, except mlc's without CandidatesRun,
	// which come from the bi-encoder (no MLC run is trained: tests of mlc refusals only read
	// the recorded source, whose run is the bi-encoder run's directory).
	Candidates string
	// CandidatesRun is the run of the first stage (default: the bi-encoder run), e.g. an MLC
	// classifier run (WriteClassifierRun) for mlc candidates, whose lists then come from it.
	CandidatesRun string
	N             int // slots, default 8
	Epochs        int // default 1
}

// WriteRefinerRun trains a tiny refiner (a one-layer BERT, hidden 16) over the embedded
// dataset for o.Epochs epochs and leaves it as train refiner does: run.json (kind refiner, the
// bi-encoder run's dev split, parent beRun), refiner.json, the tokenizer and checkpoints. The
// slots hold the Tool2Vec vectors of beRun (a run with run.json, e.g. WriteRecordedRun) over
// its training part; the recorded first stage is o.Candidates over beRun.
func WriteRefinerRun(runDir, beRun string, o RefinerOptions, be compute.Backend, seed uint64) error {
	if o.Candidates == "" {
		o.Candidates = "bi-encoder"
	}
	if o.N == 0 {
		o.N = 8
	}
	if o.Epochs == 0 {
		o.Epochs = 1
	}
	d, err := data.Default()
	if err != nil {
		return err
	}
	meta, err := rundir.Read(beRun)
	if err != nil {
		return err
	}
	tr, dev, err := meta.Split.Apply(d)
	if err != nil {
		return err
	}
	emb, err := biencoder.LoadRun(beRun, be)
	if err != nil {
		return err
	}
	usage, err := emb.RetrieverFrom(d, biencoder.VectorsUsage, tr)
	if err != nil {
		return err
	}
	tok, err := Tokenizer()
	if err != nil {
		return err
	}
	enc, err := encoder.New("bert", encoder.Sizes{Vocab: tok.VocabSize(), Hidden: 16, Layers: 1, Heads: 2, Intermediate: 32, MaxPositions: 64})
	if err != nil {
		return fmt.Errorf("exporttest: %w", err)
	}
	src := candidates.Source{Kind: o.Candidates, Run: beRun}
	if o.CandidatesRun != "" {
		src.Run = o.CandidatesRun
	}
	if src.Kind == "bm25" {
		src.Run = ""
	}
	cfg := &refiner.Config{Encoder: enc.WithPooler(false), MaxLen: 24, N: o.N, Tools: len(d.Tools), Dim: len(usage.Tools[0]),
		LossKind: refiner.LossSoftmax, SlotPositions: refiner.SlotPosNone, Candidates: src, Vectors: beRun}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("exporttest: %w", err)
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(seed))
	if err := cfg.Encoder.Init(store.RootScope(), seed); err != nil {
		return fmt.Errorf("exporttest: %w", err)
	}
	if err := cfg.SetVectors(store, usage.Tools); err != nil {
		return err
	}
	if err := rundir.Create(runDir, &rundir.Meta{Kind: "refiner", Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: meta.Split, Parent: beRun}); err != nil {
		return err
	}
	files, err := rundir.WriteModelFiles(runDir, refiner.ConfigFile, cfg.Marshal(), tok)
	if err != nil {
		return err
	}
	listSrc := src
	if listSrc.Kind == "mlc" && o.CandidatesRun == "" {
		listSrc.Kind = "bi-encoder"
	}
	first, _, err := candidates.Open(listSrc, d, tr, be)
	if err != nil {
		return err
	}
	lists, err := candidates.Compute(context.Background(), first, d, append(tr.Judged(), dev.Judged()...), 2*o.N)
	if err != nil {
		return err
	}
	task := &refiner.Task{Cfg: cfg, Data: d, Train: tr, Dev: dev, Tok: tok, Backend: be, BatchSize: 64, Seed: seed,
		Lists: lists, Missing: refiner.MissingInsert, Order: refiner.OrderShuffle, ExtraFiles: files}
	if err := task.Prepare(); err != nil {
		return err
	}
	opt := train.DefaultOptimizer()
	opt.LR, opt.Schedule = 1e-3, "constant"
	tc := train.Config{RunDir: runDir, Seed: seed, Epochs: o.Epochs, Metric: "ndcg@5", KeepLast: 1, Optimizer: opt,
		Fingerprint: d.Fingerprint(), Quiet: true}
	if _, err := train.Run(be, store, task, tc, false); err != nil {
		return fmt.Errorf("exporttest: train refiner: %w", err)
	}
	return nil
}

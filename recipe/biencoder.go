package recipe

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// PretrainedLR is the peak learning rate an "auto" TrainSchedule.LR takes when fine-tuning
// pre-trained weights (sentence-transformers' default is 2e-5 as well).
const PretrainedLR = 2e-5

// LoRALR is the peak learning rate an "auto" TrainSchedule.LR takes when training LoRA
// adapters of pre-trained weights (-lora-rank): adapters start at zero and want a learning
// rate about ten times a full fine-tune's.
const LoRALR = 5e-4

// BiEncoderResult is what BiEncoder returns.
type BiEncoderResult struct {
	// RunDir is the run directory trained into.
	RunDir string
	// Config is the configuration the run trained with, every "auto" field resolved (as
	// run.json records it).
	Config biencoder.TrainConfig
	// Summary is the trainer's end-of-training summary (summary.json).
	Summary *train.Summary
	// Test holds the test split's reports by tool vectors, "text" and (but for an
	// iteration-aware run) "usage" (test_metrics.json); nil without a test split.
	Test map[string]metrics.Report
}

// BiEncoder trains a bi-encoder tool retriever into cfg.RunDir (train biencoder): it writes the
// run (run.json with the typed configuration, checkpoints, metrics, summary), evaluates the
// best checkpoint on cfg.Split.Test and writes test_metrics.json. With cfg.Resume it
// continues the run from its newest checkpoint, refusing a configuration that differs from
// the recorded one. Errors name the flag of the field at fault (-lr, -batch, ...).
func BiEncoder(ctx context.Context, cfg biencoder.TrainConfig) (*BiEncoderResult, error) {
	out, log := cfg.Stdout, cfg.Stderr
	if out == nil {
		out = os.Stdout
	}
	if log == nil {
		log = os.Stderr
	}
	if cfg.RunDir == "" {
		return nil, fmt.Errorf("no run directory (-run)")
	}
	var meta *rundir.Meta
	if cfg.Resume {
		var err error
		if meta, err = rundir.Read(cfg.RunDir); err != nil {
			return nil, err
		}
		if meta.Kind != biencoder.Kind {
			return nil, fmt.Errorf("resume %s: a %s run, not a bi-encoder run", cfg.RunDir, meta.Kind)
		}
		rec, err := biencoder.RecordedConfigOf(cfg.RunDir, meta)
		if err != nil {
			return nil, err
		}
		if cfg.Parent.Init != "" && cfg.Parent.Init != rec.Parent.Init {
			if dir, err := hub.Resolve(ctx, cfg.Parent.Init); err == nil {
				cfg.Parent.Init = dir
			}
		}
		if cfg, err = cfg.CheckResume(rec); err != nil {
			return nil, err
		}
	} else {
		if err := rundir.CheckNew(cfg.RunDir); err != nil {
			return nil, err
		}
		if err := resolveInit(ctx, &cfg); err != nil {
			return nil, err
		}
	}
	m, t, sp, pa := &cfg.Model, &cfg.Training, &cfg.Split, &cfg.Parent
	if t.LR == 0 {
		t.LR = 5e-4
	}
	if err := check.First(cfg.Validate(), checkArch(m.Arch)); err != nil {
		return nil, err
	}
	if m.QueryLen < 2 || m.ToolLen < 2 {
		return nil, fmt.Errorf("-query-len %d, -tool-len %d: each must be >= 2 ([CLS] and [SEP])", m.QueryLen, m.ToolLen)
	}
	if t.HardNegatives > 0 && t.Negatives == "" && sp.Usage == "" {
		return nil, fmt.Errorf("-hard-negatives %d needs -negatives FILE (train mine) or -usage LOG", t.HardNegatives)
	}
	padding, err := t.Padding()
	if err != nil {
		return nil, err
	}
	reg := biencoder.Regularization{FreezeEmbeddings: t.FreezeEmbeddings, ToolDropout: t.ToolDropout, FreezeTower: t.FreezeTower}
	if !(reg.ToolDropout >= 0 && reg.ToolDropout < 1) {
		return nil, fmt.Errorf("-tool-dropout %v: a probability, must be in [0, 1)", reg.ToolDropout)
	}
	switch {
	case reg.FreezeTower != "" && reg.FreezeTower != biencoder.QueryTower && reg.FreezeTower != biencoder.ToolTower:
		return nil, fmt.Errorf("-freeze-tower %q: want %s or %s", reg.FreezeTower, biencoder.QueryTower, biencoder.ToolTower)
	case reg.FreezeTower != "" && !m.SeparateTowers:
		return nil, fmt.Errorf("-freeze-tower %s needs -separate-towers (with one shared tower it would freeze the whole model)", reg.FreezeTower)
	}
	obj, err := biencoder.ParseObjective(m.Objective)
	if err != nil {
		return nil, fmt.Errorf("-objective: %w", err)
	}
	q2q := obj == biencoder.ObjectiveQuery2Query
	if q2q {
		if err := check.First(check.Positive("positives-per-query", t.PositivesPerQuery), check.Positive("negatives-per-query", t.NegativesPerQuery),
			check.Positive("margin", m.Margin)); err != nil {
			return nil, err
		}
		switch {
		case t.HardNegatives > 0 || t.Negatives != "":
			return nil, fmt.Errorf("-hard-negatives and -negatives are tool negatives of -objective %s; %s mines its own (-negatives-per-query)", biencoder.ObjectiveQuery2Tool, obj)
		case m.SeparateTowers:
			return nil, fmt.Errorf("-objective %s trains one shared tower: -separate-towers does not apply", obj)
		case reg != (biencoder.Regularization{}):
			return nil, fmt.Errorf("-freeze-embeddings, -freeze-tower and -tool-dropout apply to -objective %s (and -feedback) only", biencoder.ObjectiveQuery2Tool)
		case t.MiniBatch > 0:
			return nil, fmt.Errorf("-mini-batch (GradCache) applies to -objective %s (and -feedback): %s's triplet loss is not cached", biencoder.ObjectiveQuery2Tool, obj)
		}
	} else if pa.Retriever != "" && pa.Feedback == "" {
		return nil, fmt.Errorf("-first-stage is used by -objective %s only (it mines the query triplets), or with -feedback (the collection's retriever, when it moved)", biencoder.ObjectiveQuery2Query)
	}
	if err := checkFeedback(&cfg, q2q); err != nil {
		return nil, err
	}
	if err := checkToolQueries(t.ToolQueries, q2q, pa.Feedback != ""); err != nil {
		return nil, err
	}
	if err := checkExamples(&cfg, q2q); err != nil {
		return nil, err
	}
	d, err := openData(&cfg)
	if err != nil {
		return nil, err
	}
	var exNegs map[int][]int // the usage log's hard negatives
	if sp.Usage != "" || sp.Synthetic > 0 {
		if d, exNegs, err = withExamples(ctx, &cfg, d, log); err != nil {
			return nil, err
		}
	}
	prec, compute, why, err := t.ResolvePrecision(cfg.Backend)
	if err != nil {
		return nil, err
	}
	t.Precision = prec // auto as taken, recorded in run.json
	bk, err := train.OpenBackend(cfg.Backend, cfg.Devices)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(log, why)
	var fbData *trainFeedback
	fbT := 0
	if pa.Feedback != "" {
		if fbData, err = readFeedback(pa.Feedback, pa.Retriever, d); err != nil {
			return nil, err
		}
		if fbT, err = fbData.Iterations(t.Iterations); err != nil {
			return nil, err
		}
	}
	var trainSplit, dev *data.Split
	var pending *rundir.Meta
	from := "train" // the split the dev queries were carved from
	if meta != nil {
		if trainSplit, dev, _, err = rundir.Splits(cfg.RunDir, d); err != nil {
			return nil, err
		}
		from = meta.Split.From
	} else if fbData != nil || pa.Retriever != "" { // feedback: the collection's retriever's dev split; query2query: the -first-stage run's
		parentRun, what := pa.Retriever, "the -first-stage run's"
		if fbData != nil {
			parentRun, what = fbData.retriever, "the retriever's of -feedback"
		}
		var parent *rundir.Meta
		if trainSplit, dev, parent, err = rundir.Splits(parentRun, d); err != nil {
			if fbData != nil {
				return nil, fmt.Errorf("-feedback: the collection's retriever: %w", err)
			}
			return nil, err
		}
		from = parent.Split.From
		if sp.Dev != 0 && sp.Dev != parent.Split.DevFraction {
			return nil, fmt.Errorf("-dev %v: the dev split is %s (%s: dev %v, seed %d); omit -dev", sp.Dev, what, parentRun, parent.Split.DevFraction, parent.Split.Seed)
		}
		pending = &rundir.Meta{Kind: biencoder.Kind, Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: parent.Split, Parent: parentRun}
	} else {
		var split rundir.Split
		if sp.Dev == 0 {
			sp.Dev = rundir.DefaultDev
		}
		if split, trainSplit, dev, err = rundir.Carve(d, "train", sp.Dev, int64(t.Seed)); err != nil {
			return nil, err
		}
		// run.json is written when training starts: a run failing before leaves none behind.
		pending = &rundir.Meta{Kind: biencoder.Kind, Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: split}
	}
	if pending != nil {
		sp.Dev = pending.Split.DevFraction
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(t.Seed))
	var mc *biencoder.Config
	var tok *tokenize.Tokenizer
	if cfg.Resume {
		b, err := os.ReadFile(filepath.Join(cfg.RunDir, biencoder.ConfigFile))
		if err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		if mc, err = biencoder.Unmarshal(b); err != nil {
			return nil, err
		}
		if tok, err = tokenize.Load(cfg.RunDir); err != nil {
			return nil, err
		}
	} else {
		if mc, tok, err = newModel(&cfg, d, trainSplit, bk, store, log); err != nil {
			return nil, err
		}
		if q2q {
			mc.Objective, mc.Margin = obj, m.Margin
		}
		if fbData != nil {
			mc.Marker = m.Marker
		}
		if mc.LoRA, err = m.LoRA(mc.Encoder); err != nil {
			return nil, err
		}
		if mc.LoRA != nil { // the auto fields as taken, recorded in run.json
			m.LoRAAlpha, m.LoRATargets = mc.LoRA.Alpha, strings.Join(mc.LoRA.Targets, ",")
		}
	}
	mc.Compute = compute
	if err := encoder.CheckCompute(mc.Encoder, compute); err != nil {
		return nil, fmt.Errorf("-precision %s: %w", t.Precision, err)
	}
	files, err := biencoder.WriteRunFiles(cfg.RunDir, mc, tok)
	if err != nil {
		return nil, err
	}
	negs := exNegs
	if t.Negatives != "" {
		if negs, err = biencoder.ReadNegatives(t.Negatives, d); err != nil {
			return nil, err
		}
	}
	var task train.Task
	examples := fmt.Sprintf("%d train pairs", len(trainSplit.Pairs()))
	if q2q {
		ns, err := queryTriplets(cfg.RunDir, cfg.Resume, d, trainSplit, pa.Retriever, bk, t.PositivesPerQuery, t.NegativesPerQuery, log)
		if err != nil {
			return nil, err
		}
		qt := &biencoder.QueryTask{Cfg: mc, Data: d, Train: trainSplit, Dev: dev, Tok: tok, Backend: bk, BatchSize: t.Batch,
			Seed: t.Seed, Triplets: ns, Padding: padding, ExtraFiles: files}
		if err := qt.Prepare(); err != nil {
			return nil, err
		}
		task, examples = qt, fmt.Sprintf("%d query triplets (%s, margin %v)", qt.Examples(), obj, mc.Margin)
	} else if fbData != nil {
		loops, err := fbData.TrainingLoops(d, trainSplit, from, fbT)
		if err != nil {
			return nil, err
		}
		ft := &biencoder.FeedbackTask{Cfg: mc, Data: d, Train: trainSplit, Dev: dev, Tok: tok, Backend: bk, BatchSize: t.Batch, StrictBatches: t.StrictBatches,
			Seed: t.Seed, Loops: loops, Iterations: fbT, Alpha: t.Alpha, Joint: t.FeedbackJoint, HardNegatives: t.FeedbackHardNegatives, Padding: padding, ExtraFiles: files, Reg: reg, MiniBatchSize: t.MiniBatch}
		if err := ft.Prepare(); err != nil {
			return nil, err
		}
		if err := fbData.Record(cfg.RunDir, pa.Feedback, fbT, cfg.Resume); err != nil {
			return nil, err
		}
		task, examples = ft, ft.Describe()
	} else {
		bt := &biencoder.Task{Cfg: mc, Data: d, Train: trainSplit, Dev: dev, Tok: tok, Backend: bk, BatchSize: t.Batch, StrictBatches: t.StrictBatches,
			Seed: t.Seed, HardNegatives: t.HardNegatives, Negatives: negs, Padding: padding, ExtraFiles: files, Reg: reg, ToolQueries: t.ToolQueries, MiniBatchSize: t.MiniBatch}
		if err := bt.Prepare(); err != nil {
			return nil, err
		}
		task = bt
		if s := bt.ToolQueriesSummary(); s != "" {
			examples += " + " + s
		}
	}
	tc, steps := train.RunSettings{RunDir: cfg.RunDir, Seed: t.Seed, Epochs: t.Epochs, MaxSteps: t.MaxSteps, MaxTime: t.MaxTime, EvalEvery: t.EvalEvery,
		Metric: t.Metric, Patience: t.Patience, LR: t.LR, WeightDecay: t.WeightDecay, Schedule: t.Schedule, Clip: t.Clip, Accumulate: t.Accumulate,
		Warmup: t.Warmup, Fingerprint: d.Fingerprint(), Devices: cfg.Devices, Quiet: cfg.Quiet}.Config(task)
	if reg != (biencoder.Regularization{}) {
		fmt.Fprintf(log, "regularisation: %s\n", reg)
	}
	if l := mc.LoRA; l != nil {
		fmt.Fprintf(log, "lora: rank %d, alpha %g (scale %g), dropout %g, targets %s: only the adapters train\n", l.Rank, l.Alpha, l.Scale(), l.Dropout, strings.Join(l.Targets, ","))
	}
	fmt.Fprintf(log, "%s\nbi-encoder: %d layers, hidden %d, vocab %d, %s pooling, %s, %d dev queries, %d steps -> %s\n",
		d.Stats(), mc.Encoder.Layers(), mc.Encoder.Hidden(), mc.Encoder.Vocab(), mc.Pooling, examples, len(dev.Queries), steps, cfg.RunDir)
	if pending != nil {
		if err := pending.Record(&cfg, cfg.Args); err != nil { // every auto field resolved
			return nil, err
		}
		if err := rundir.Create(cfg.RunDir, pending); err != nil {
			return nil, err
		}
	}
	sum, err := train.Run(bk, store, task, tc, cfg.Resume)
	if err != nil {
		return nil, err
	}
	compiling := "" // not measured with GradCache
	if sum.CompileSeconds > 0 {
		compiling = fmt.Sprintf(" (%.1fs compiling the step)", sum.CompileSeconds)
	}
	fmt.Fprintf(log, "trained %d steps in %.0fs%s; best dev %s %.2f at step %d\n", sum.Steps, sum.Seconds, compiling, t.Metric, sum.BestMetrics[t.Metric], sum.BestStep)
	res := &BiEncoderResult{RunDir: cfg.RunDir, Config: cfg, Summary: sum}
	if sp.Test == "" {
		return res, nil
	}
	if _, ok := d.Splits[sp.Test]; !ok {
		fmt.Fprintf(log, "note: dataset %s has no split %q (splits: %s): no test evaluation; the run is saved in %s (-test \"\" skips it quietly)\n",
			d.Name, sp.Test, strings.Join(d.SplitNames(), ", "), cfg.RunDir)
		return res, nil
	}
	if res.Test, err = evalTest(ctx, cfg.RunDir, d, sp.Test, bk, out); err != nil {
		return nil, err
	}
	return res, nil
}

// evalTest evaluates the best checkpoint of the run at dir on split with every kind of tool
// vectors, printing the reports on out, and writes test_metrics.json.
func evalTest(ctx context.Context, dir string, d *data.Dataset, split string, bk compute.Backend, out io.Writer) (map[string]metrics.Report, error) {
	emb, err := biencoder.LoadRun(dir, bk)
	if err != nil {
		return nil, err
	}
	reps := map[string]metrics.Report{}
	rec := map[string]any{}
	vecs := []string{"text", "usage"}
	marker := emb.Cfg.Marker
	if marker != "" { // usage vectors average unmarked training queries: not for an iteration-aware run
		vecs = vecs[:1]
	}
	for _, vec := range vecs {
		r, err := emb.Ranker(d, vec, "train")
		if err != nil {
			return nil, err
		}
		var rk rank.Ranker = r
		if marker != "" { // an iteration-aware run: round 0's ranking
			rk = biencoder.Marked{R: r, Marker: marker}
		}
		rep, err := metrics.Run(ctx, d, split, rk, metrics.DefaultKs)
		if err != nil {
			return nil, err
		}
		if n := r.UsageNote(); n != "" {
			fmt.Fprintln(out, n)
		}
		rep.Dataset = fmt.Sprintf("%s (tool vectors: %s)", d.Name, vec)
		fmt.Fprint(out, rep)
		reps[vec], rec[vec] = rep, rep
	}
	return reps, rundir.WriteJSON(dir, "test_metrics.json", rec)
}

// resolveInit resolves Parent.Init in place: a run or directory stays as it is, a hub id
// org/name[@revision] becomes its snapshot in the Hugging Face hub cache (downloaded when
// missing). For pre-trained weights (an HF directory) the auto fields follow the model: LR
// PretrainedLR (LoRALR with LoRA), Pooling that of its sentence-transformers Pooling module, QueryPrompt and
// ToolPrompt its "query" and "document" prompts.
func resolveInit(ctx context.Context, cfg *biencoder.TrainConfig) error {
	if cfg.Parent.Init == "" {
		return nil
	}
	dir, err := hub.Resolve(ctx, cfg.Parent.Init)
	if err != nil {
		return fmt.Errorf("-init: %w", err)
	}
	cfg.Parent.Init = dir
	if !encoder.IsHFDir(dir) {
		return nil
	}
	if cfg.Training.LR == 0 {
		cfg.Training.LR = PretrainedLR
		if cfg.Model.LoRARank > 0 {
			cfg.Training.LR = LoRALR
		}
	}
	if cfg.Model.Pooling == "" {
		p, ok, err := encoder.STPooling(dir)
		if err != nil {
			return fmt.Errorf("-init: %w", err)
		}
		if ok {
			cfg.Model.Pooling = string(p)
		}
	}
	if cfg.Model.QueryPrompt == nil || cfg.Model.ToolPrompt == nil {
		q, t, err := encoder.STPrompts(dir)
		if err != nil {
			return fmt.Errorf("-init: %w", err)
		}
		if cfg.Model.QueryPrompt == nil {
			cfg.Model.QueryPrompt = &q
		}
		if cfg.Model.ToolPrompt == nil {
			cfg.Model.ToolPrompt = &t
		}
	}
	return nil
}

// openData loads Split.Data as the held-out-tool view Split.HoldoutTools and HoldoutSeed
// name; with none and a Parent.Retriever trained on a view, that view (recorded in cfg);
// with neither, Data may be a list of sources (data.OpenSources: "toollens:1,toolmix:1").
func openData(cfg *biencoder.TrainConfig) (*data.Dataset, error) {
	sp := &cfg.Split
	h, err := data.NewHoldout(sp.HoldoutTools, sp.HoldoutSeed)
	if err != nil {
		return nil, err
	}
	if h == nil {
		if h = rundir.RecordedHoldout(cfg.Parent.Retriever); h != nil {
			sp.HoldoutTools, sp.HoldoutSeed = h.Fraction, uint64(h.Seed)
		}
	}
	d, err := data.OpenView(sp.Data, h)
	if err != nil && h != nil {
		return nil, fmt.Errorf("%s: %w", h.Flags(), err)
	}
	return d, err
}

// checkFeedback validates the feedback fields: without Parent.Feedback they must keep their
// defaults.
func checkFeedback(cfg *biencoder.TrainConfig, q2q bool) error {
	t, def := cfg.Training, biencoder.DefaultTrainConfig()
	if cfg.Parent.Feedback == "" {
		for _, f := range []struct {
			name     string
			set, def any
		}{{"iterations", t.Iterations, def.Training.Iterations}, {"alpha", t.Alpha, def.Training.Alpha},
			{"marker", cfg.Model.Marker, def.Model.Marker}, {"feedback-joint", t.FeedbackJoint, def.Training.FeedbackJoint},
			{"feedback-hard-negatives", t.FeedbackHardNegatives, def.Training.FeedbackHardNegatives}} {
			if f.set != f.def {
				return fmt.Errorf("-%s is a flag of -feedback training", f.name)
			}
		}
		return nil
	}
	switch {
	case q2q:
		return fmt.Errorf("-feedback trains queries against tools: not with -objective %s", biencoder.ObjectiveQuery2Query)
	case cfg.Model.QueryPrompt != nil && *cfg.Model.QueryPrompt != "":
		return fmt.Errorf("-query-prompt %q: a feedback retriever's queries carry its iteration marker (-marker), not a prompt (-query-prompt \"\" trains from a model that has one without it)", *cfg.Model.QueryPrompt)
	case t.HardNegatives > 0 || t.Negatives != "":
		return fmt.Errorf("-feedback draws its hard negatives from the collection's top K (-feedback-hard-negatives): not with -hard-negatives or -negatives")
	case t.Iterations < 0:
		return fmt.Errorf("-iterations %d: must be >= 0", t.Iterations)
	case !(t.Alpha > 0):
		return fmt.Errorf("-alpha %v: must be > 0", t.Alpha)
	}
	if cfg.Model.Marker != "" {
		if err := biencoder.CheckMarker(cfg.Model.Marker); err != nil {
			return fmt.Errorf("-marker: %w", err)
		}
	}
	return nil
}

// checkToolQueries checks -tool-queries n: not negative; only for -objective query2tool
// without -feedback.
func checkToolQueries(n int, q2q, feedback bool) error {
	switch {
	case n < 0:
		return fmt.Errorf("-tool-queries %d: pseudo pairs per tool, must be >= 0", n)
	case n == 0:
		return nil
	case q2q:
		return fmt.Errorf("-tool-queries %d applies to -objective %s only (pseudo (query, tool) pairs; %s trains on query triplets)", n, biencoder.ObjectiveQuery2Tool, biencoder.ObjectiveQuery2Query)
	case feedback:
		return fmt.Errorf("-tool-queries %d is not supported with -feedback (its examples are feedback loops of real queries)", n)
	}
	return nil
}

package runs

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

// Head is the configuration the encoder + head models share (the cross-encoder, the
// classifiers and the refiner): the run, where the encoder comes from (Init, WarmStart, else
// from scratch) and the trainer's knobs. Each setting is a flag of train crossencoder,
// classifier and refiner: its json tag is the flag's name and its help tag the flag's help
// (package internal/flagcfg declares the flags from the fields); the fields tagged json:"-"
// are operational (flags the command declares itself) or set by the command. DefaultHead
// returns the flags' defaults.
type Head struct {
	RunDir    string `json:"-"`                                                                                           // -run: the run directory (required)
	Resume    bool   `json:"-"`                                                                                           // -resume: continue RunDir from its newest checkpoint (the configuration must be the run's: Train names every field that differs)
	Retriever string `json:"first-stage" help:"stage-1 bi-encoder run (train biencoder); its recorded dev split is used"` // -first-stage: the stage-1 bi-encoder run (its recorded dev split; its tokenizer from scratch)
	// Init is -init: a HuggingFace BERT or DeBERTa-v2/v3 directory, or a bi-encoder or pretrain
	// run whose encoder and tokenizer start the model ("": none). A hub id must be resolved to
	// its directory first (hub.Resolve).
	Init      string `json:"init" help:"initialise the encoder from a HuggingFace BERT or DeBERTa-v2/v3 directory or hub id org/name[@revision] (lr 2e-5 unless given), or from a bi-encoder or pretrain run (its encoder and tokenizer, as -warm-start takes the -first-stage's; else from scratch)"`
	WarmStart bool   `json:"warm-start" help:"initialise the encoder with the -first-stage run's trained weights (its sizes and vocabulary; a BERT position table shorter than -max-len is extended with new rows, other encoders cap -max-len at theirs)"` // -warm-start: start from the Retriever run's trained encoder and tokenizer
	// Arch is -arch, the architecture from scratch: bert (default), deberta or wordbag.
	Arch string `json:"arch" help:"from scratch: encoder architecture, bert, deberta (DeBERTa-v3: disentangled attention over log-bucketed relative positions) or wordbag (idf-weighted bag of word vectors, -hidden wide, no layers; bi-encoders only)"`
	// ArchGiven says -arch was given: an encoder from Init or the Retriever must then be of Arch.
	ArchGiven bool `json:"-"`
	// Pooling is -pooling, the head's input: cls, mean or pooler ("": the encoder's default, pooler
	// for DeBERTa, cls for BERT).
	Pooling      string `json:"pooling" help:"head input: cls (the [CLS] state), mean (the mean of the token states, as a sentence-transformers model pools: a SetFit-style head over a pre-trained sentence encoder; not exportable in HF layout) or pooler (the encoder's pooler layer over [CLS], as HF's XxxForSequenceClassification: BERT dense + tanh, DeBERTa's ContextPooler dense + GELU); default pooler for DeBERTa, cls for BERT"`
	Layers       int    `json:"layers" help:"from scratch: layers"`                                     // -layers: from scratch (default 2)
	Hidden       int    `json:"hidden" help:"from scratch: hidden size"`                                // -hidden: from scratch (default 128)
	Heads        int    `json:"heads" help:"from scratch: attention heads"`                             // -heads: from scratch (default 4)
	Intermediate int    `json:"intermediate" help:"from scratch: intermediate size (default 4*hidden)"` // -intermediate: from scratch (default 0: 4*Hidden)
	MaxLen       int    `json:"max-len" help:"max tokens per input (specials included)"`                // -max-len: tokens per input, specials included
	Batch        int    `json:"batch" help:"examples per batch"`                                        // -batch: examples per batch
	Epochs       int    `json:"epochs" help:"epochs"`                                                   // -epochs
	// MaxSteps is -max-steps: stop after this many optimizer steps, the schedule fitted to
	// them (default 0: all of Epochs).
	MaxSteps int `json:"max-steps" help:"stop after this many optimizer steps, the learning-rate schedule fitted to them (0: all of -epochs)"`
	// MaxTime is -max-time: stop at the first step past this wall-clock time (train.Config.MaxTime).
	MaxTime time.Duration `json:"max-time" help:"stop at the first optimizer step past this wall-clock time since the run began, e.g. 4m (evaluated and checkpointed there; the schedule keeps its length; 0: no limit)"`
	LR      float64       `json:"lr" help:"peak learning rate (5e-4 from scratch; ~2e-5 with -init)"` // -lr: peak learning rate (default 5e-4; ~2e-5 with pre-trained weights)
	// HeadLR is -head-lr: the peak learning rate of the layers the kind adds above its encoder
	// (the classifier's and cross-encoder's head, the refiner's slot projection, positions and
	// scorer), e.g. 10-100x LR when the encoder is pre-trained and the head new (0: LR).
	HeadLR      float64 `json:"head-lr" help:"peak learning rate of the head the model adds above its encoder (its weight decay scales with it); e.g. 10-100x -lr over a pre-trained encoder, whose new head otherwise learns at the encoder's rate (0: -lr)"`
	WeightDecay float64 `json:"weight-decay" help:"AdamW weight decay"`             // -weight-decay: AdamW weight decay (default 0.01)
	Warmup      float64 `json:"warmup" help:"warmup fraction of the steps"`         // -warmup: warmup fraction of the steps (default 0.1)
	Schedule    string  `json:"schedule" help:"linear, cosine or constant"`         // -schedule: linear (default), cosine or constant
	Clip        float64 `json:"clip" help:"global gradient-norm clipping (0: off)"` // -clip: global gradient-norm clipping (default 1; 0: off)
	Accumulate  int     `json:"accumulate" help:"micro-batches per optimizer step"` // -accumulate: micro-batches per optimizer step (default 1)
	// Dev is -dev: without Retriever, the fraction of the training queries carved as dev
	// (default 0.1); with one, its recorded dev split is taken.
	Dev float64 `json:"dev" help:"without -first-stage: fraction of the training queries held out as dev (with -first-stage its recorded dev split is used)"`
	// DevGiven says -dev was given: with a Retriever, Dev must then be the retriever's fraction.
	DevGiven  bool   `json:"-"`
	Seed      uint64 `json:"seed" help:"random seed"`                                                                               // -seed (default 1)
	EvalEvery int    `json:"eval-every" help:"optimizer steps between dev evaluations (0: each epoch)"`                             // -eval-every: optimizer steps between dev evaluations (default 0: each epoch)
	Metric    string `json:"metric" help:"dev metric selecting the best checkpoint: recall@K, ndcg@K or comp@K with K in 1,3,5,10"` // -metric: the dev metric selecting the best checkpoint
	Patience  int    `json:"patience" help:"stop after this many evaluations without improvement (0: never)"`                       // -patience: evaluations without improvement before stopping (default 0: never)
	Backend   string `json:"-"`                                                                                                     // -backend: compute backend name ("": the default, see package backend)
	Devices   int    `json:"-"`                                                                                                     // -devices: split each batch over this many devices of Backend (0 or 1: one; train.Config.Devices)
	Test      string `json:"test" help:"split evaluated at the end (empty: none)"`                                                  // -test: the split evaluated at the end (default "test"; "": none)
	Quiet     bool   `json:"-"`                                                                                                     // -quiet: no progress bar
	// Stdout and Stderr receive the reports and the messages (nil: os.Stdout, os.Stderr); the
	// trainer's progress bar goes to os.Stderr.
	Stdout, Stderr io.Writer `json:"-"`
}

// DefaultHead returns the defaults of the shared flags; maxLen, batch, epochs and metric are
// the command's own.
func DefaultHead(maxLen, batch, epochs int, metric string) Head {
	return Head{Arch: DefaultArch, Layers: 2, Hidden: 128, Heads: 4, MaxLen: maxLen, Batch: batch, Epochs: epochs,
		LR: 5e-4, WeightDecay: 0.01, Warmup: 0.1, Schedule: "linear", Clip: 1, Accumulate: 1, Dev: cli.DefaultDev,
		Seed: cli.DefaultSeed, Metric: metric, Test: "test"}
}

// Check validates the shared knobs (the sizes only for an encoder from scratch).
func (h *Head) Check() error {
	if err := cli.First(cli.Positive("batch", h.Batch), cli.Positive("epochs", h.Epochs), cli.Positive("lr", h.LR), cli.NonNegative("head-lr", h.HeadLR),
		cli.Positive("accumulate", h.Accumulate), cli.NonNegative("max-steps", h.MaxSteps), cli.NonNegative("max-time", int64(h.MaxTime)), cli.Positive("max-len", h.MaxLen), cli.Fraction("dev", h.Dev),
		cli.NonNegative("weight-decay", h.WeightDecay), cli.NonNegative("clip", h.Clip), cli.NonNegative("eval-every", h.EvalEvery),
		cli.NonNegative("patience", h.Patience), CheckWarmup(h.Warmup), CheckArch(h.Arch)); err != nil {
		return err
	}
	if h.Init == "" && !h.WarmStart {
		return cli.First(cli.Positive("layers", h.Layers), cli.Positive("hidden", h.Hidden), cli.Positive("heads", h.Heads),
			cli.NonNegative("intermediate", h.Intermediate))
	}
	return nil
}

// CheckPooling validates -pooling: empty (the encoder's default) or a head pooling.
func CheckPooling(p string) error {
	if p != "" && p != string(encoder.PoolCLS) && p != string(encoder.PoolMean) && p != string(encoder.PoolPooler) {
		return fmt.Errorf("-pooling %q: want cls, mean or pooler", p)
	}
	return nil
}

// Session is a head run being trained: its data, backend, splits and output.
type Session struct {
	H          *Head
	Kind       string
	Data       *data.Dataset
	Backend    compute.Backend
	Train, Dev *data.Split
	Out, Log   io.Writer
	// pending is a new run's run.json, written by Create when training starts with cfg, the
	// kind's typed configuration, as its Config.
	pending *rundir.Meta
	cfg     any
}

// Start opens the run directory of a run of kind, the backend, and the dev split: the
// resumed run's, else the Retriever run's recorded one, else one carved with Dev and Seed.
// A new run's run.json (recording args, the caller's settings, as provenance) is written by
// Create, when training starts: a run failing before leaves none behind.
func (h *Head) Start(kind string, d *data.Dataset, args map[string]string) (*Session, error) {
	d, bk, err := Start(h.RunDir, h.Resume, kind, kind, d, h.Backend, h.Devices)
	if err != nil {
		return nil, err
	}
	s := &Session{H: h, Kind: kind, Data: d, Backend: bk}
	s.Out, s.Log = Writers(h.Stdout, h.Stderr)
	switch {
	case h.Resume:
		s.Train, s.Dev, _, err = rundir.Splits(h.RunDir, d)
	case h.Retriever != "":
		var parent *rundir.Meta
		if s.Train, s.Dev, parent, err = rundir.Splits(h.Retriever, d); err != nil {
			break
		}
		if h.DevGiven && h.Dev != parent.Split.DevFraction {
			err = fmt.Errorf("-dev %v: the dev split is the -first-stage run's (%s: dev %v, seed %d); omit -dev", h.Dev, h.Retriever, parent.Split.DevFraction, parent.Split.Seed)
			break
		}
		s.pending = &rundir.Meta{Kind: kind, Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: parent.Split, Parent: h.Retriever, Args: args}
	default:
		var sp rundir.Split
		if sp, s.Train, s.Dev, err = rundir.Carve(d, "train", h.Dev, int64(h.Seed)); err != nil {
			break
		}
		s.pending = &rundir.Meta{Kind: kind, Dataset: d.Name, Fingerprint: d.Fingerprint(), Split: sp, Args: args}
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Create writes a new run's run.json (Start made it), once; a resumed run has one.
func (s *Session) Create() error {
	if s.pending == nil {
		return nil
	}
	if s.cfg != nil {
		if err := s.pending.Record(s.cfg, s.pending.Args); err != nil {
			return err
		}
	}
	if err := rundir.Create(s.H.RunDir, s.pending); err != nil {
		return err
	}
	s.pending = nil
	return nil
}

// Run writes a new run's run.json (Create, unless done already), trains task on store with tc
// (s.TrainConfig), resuming when the run is resumed, and logs the summary line: steps, time
// and the best dev value of the selection metric.
func (s *Session) Run(store *model.Store, task train.Task, tc train.Config) (*train.Summary, error) {
	if err := s.Create(); err != nil {
		return nil, err
	}
	sum, err := train.Run(s.Backend, store, task, tc, s.H.Resume)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(s.Log, "trained %d steps in %.0fs; best dev %s %.2f at step %d\n", sum.Steps, sum.Seconds, s.H.Metric, sum.BestMetrics[s.H.Metric], sum.BestStep)
	return sum, nil
}

// Store returns a new parameter store seeded with Seed.
func (s *Session) Store() *model.Store {
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(s.H.Seed))
	return store
}

// Model returns the model configuration and tokenizer of the session's run: a resumed run's
// recorded ones (LoadResume of configFile with unmarshal), else the configuration build makes
// around a new encoder (Session.Encoder into store, pairs) and that encoder's tokenizer.
func Model[T any](s *Session, store *model.Store, configFile string, unmarshal func([]byte) (*T, error), pairs bool, build func(encoder.Config) *T) (*T, *tokenize.Tokenizer, error) {
	if s.H.Resume {
		return LoadResume(s.H.RunDir, configFile, unmarshal)
	}
	bc, tok, err := s.Encoder(store, pairs)
	if err != nil {
		return nil, nil, err
	}
	return build(bc), tok, nil
}

// ModelConfig is a head model's configuration: checked and written as JSON.
type ModelConfig interface {
	Validate() error
	Marshal() []byte
}

// ModelFiles validates mc and writes it (as configFile) and tok into the run directory
// (rundir.WriteModelFiles), returning the files every checkpoint of the run stores.
func (s *Session) ModelFiles(configFile string, mc ModelConfig, tok *tokenize.Tokenizer) (map[string][]byte, error) {
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	return rundir.WriteModelFiles(s.H.RunDir, configFile, mc.Marshal(), tok)
}

// Encoder returns the encoder config and tokenizer of a new model: from Init (weights loaded
// into store), from the Retriever run's encoder with WarmStart, or from scratch with the
// Retriever run's tokenizer (or a vocabulary built from the training texts without one). A
// pair model (pairs) from scratch gets token types.
func (s *Session) Encoder(store *model.Store, pairs bool) (encoder.Config, *tokenize.Tokenizer, error) {
	h := s.H
	if h.WarmStart {
		if h.Init != "" {
			return nil, nil, fmt.Errorf("-warm-start and -init are exclusive")
		}
		if h.Retriever == "" {
			return nil, nil, fmt.Errorf("-warm-start needs -first-stage RUN")
		}
		return s.fromRun(h.Retriever, "the -first-stage run", store)
	}
	if h.Init != "" && biencoder.IsRun(h.Init) { // a bi-encoder or pretrain run
		return s.fromRun(h.Init, h.Init, store)
	}
	if h.Init != "" {
		bc, err := encoder.LoadHF(store.RootScope(), h.Init)
		if err != nil {
			return nil, nil, err
		}
		if err := CheckArchOf(h.Arch, h.ArchGiven, bc, h.Init); err != nil {
			return nil, nil, err
		}
		tok, err := tokenize.Load(h.Init)
		if err != nil {
			return nil, nil, err
		}
		if h.MaxLen > bc.MaxPositions() {
			return nil, nil, fmt.Errorf("-max-len %d exceeds the checkpoint's max_position_embeddings %d", h.MaxLen, bc.MaxPositions())
		}
		return bc, tok, nil
	}
	var tok *tokenize.Tokenizer
	var err error
	if h.Retriever != "" {
		tok, err = tokenize.Load(h.Retriever)
	} else {
		var texts []string
		for _, t := range s.Data.Tools {
			texts = append(texts, t.Text)
		}
		for _, q := range s.Train.Queries {
			texts = append(texts, s.Data.Queries[q].Text)
		}
		var vocab []string
		if vocab, err = tokenize.BuildVocab(texts, 8000, 2, true); err == nil {
			tok, err = tokenize.New(vocab, true)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	bc, err := NewEncoder(h.Arch, encoder.Sizes{Vocab: tok.VocabSize(), Layers: h.Layers, Hidden: h.Hidden, Heads: h.Heads,
		Intermediate: h.Intermediate, MaxPositions: h.MaxLen}, pairs) // intermediate 0: 4*hidden
	if err != nil {
		return nil, nil, err
	}
	return bc, tok, nil
}

// fromRun loads the encoder and tokenizer of the bi-encoder (or pretrain) run at run into
// store with biencoder.WarmStart; what names the run in messages. A MaxLen beyond an encoder
// whose positions WarmStart cannot extend is capped at its positions.
func (s *Session) fromRun(run, what string, store *model.Store) (encoder.Config, *tokenize.Tokenizer, error) {
	h := s.H
	bc, tok, err := biencoder.WarmStart(run, s.Backend, store, h.MaxLen, h.Seed, s.Log)
	if err != nil {
		return nil, nil, err
	}
	if err := CheckArchOf(h.Arch, h.ArchGiven, bc, what); err != nil {
		return nil, nil, err
	}
	if h.MaxLen > bc.MaxPositions() {
		fmt.Fprintf(s.Log, "warm start: -max-len %d capped at %s's max_position_embeddings %d\n", h.MaxLen, what, bc.MaxPositions())
		h.MaxLen = bc.MaxPositions()
	}
	return bc, tok, nil
}

// TrainConfig returns the trainer's configuration of task and its number of optimizer steps;
// head are the path prefixes of the kind's head variables, which take HeadLR when it is set.
func (s *Session) TrainConfig(task train.Task, head ...string) (train.Config, int) {
	h := s.H
	tc, steps := train.RunSettings{RunDir: h.RunDir, Seed: h.Seed, Epochs: h.Epochs, MaxSteps: h.MaxSteps, MaxTime: h.MaxTime, EvalEvery: h.EvalEvery,
		Metric: h.Metric, Patience: h.Patience, LR: h.LR, WeightDecay: h.WeightDecay, Schedule: h.Schedule, Clip: h.Clip, Accumulate: h.Accumulate,
		Warmup: h.Warmup, Fingerprint: s.Data.Fingerprint(), Devices: h.Devices, Quiet: h.Quiet}.Config(task)
	if h.HeadLR > 0 {
		for _, p := range head {
			tc.Optimizer.Rules = append(tc.Optimizer.Rules, train.LRRule{Prefix: p, LR: h.HeadLR})
		}
	}
	return tc, steps
}

// Dataset returns d, or the embedded default dataset when d is nil.
func Dataset(d *data.Dataset) (*data.Dataset, error) {
	if d != nil {
		return d, nil
	}
	return data.Default()
}

// Begin is the start of every head model's Train: it checks a resumption's cfg (the kind's
// TrainConfig, which embeds h) against the run's recorded one (Resume), validates it, takes
// the dataset d (nil: the embedded default) and starts, or resumes, the run of kind in
// h.RunDir; a new run records cfg and the command's flags args in run.json.
func Begin(cfg interface{ Validate() error }, h *Head, kind string, d *data.Dataset, args map[string]string) (*data.Dataset, *Session, error) {
	if h.Resume {
		if err := Resume(h.RunDir, kind, kind, cfg); err != nil {
			return nil, nil, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	s, err := h.Start(kind, d, args)
	if err != nil {
		return nil, nil, err
	}
	// The configuration as the caller gave it, before training adjusts it (a warm start caps
	// max-len at the encoder's): a resume with the same configuration is then accepted.
	if s.cfg, err = snapshot(cfg); err != nil {
		return nil, nil, err
	}
	return s.Data, s, nil
}

// snapshot returns a copy of *cfg (a pointer to a configuration struct) by its JSON fields,
// the ones run.json records.
func snapshot(cfg any) (any, error) {
	v := reflect.ValueOf(cfg)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, fmt.Errorf("run configuration: %T is not a pointer", cfg)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("run configuration: %w", err)
	}
	c := reflect.New(v.Type().Elem())
	if err := json.Unmarshal(b, c.Interface()); err != nil {
		return nil, fmt.Errorf("run configuration: %w", err)
	}
	return c.Interface(), nil
}

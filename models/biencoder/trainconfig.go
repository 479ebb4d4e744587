package biencoder

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
)

// Kind is the model kind of a bi-encoder run (rundir.Meta.Kind).
const Kind = "biencoder"

// TrainConfig is a bi-encoder training run, the recipe of `train biencoder`: every flag of
// the command is a typed field whose json name is the flag's (a flag tag names the flag when
// it differs) and whose help tag is its help; the command declares its flags from the
// fields (package internal/flagcfg), so a setting is one field here. The sections are what run.json
// records as the run's configuration (rundir.Meta.Config); the fields tagged `json:"-"` are
// operational and may change when a run is resumed. DefaultTrainConfig holds the defaults;
// a field documented "0: auto" (or "": auto) takes a value that depends on the others, and
// run.json records the value taken.
type TrainConfig struct {
	Split    TrainSplit    `json:"split"`
	Parent   TrainParent   `json:"parent"`
	Model    TrainModel    `json:"model"`
	Training TrainSchedule `json:"training"`

	// RunDir is the run directory (-run; required).
	RunDir string `json:"-"`
	// Resume continues RunDir from its newest checkpoint (-resume). The configuration must
	// be the run's (RecordedConfig returns it): Train names every field that differs; a
	// field left at its "auto" zero takes the run's value.
	Resume bool `json:"-"`
	// Backend is the compute backend's name (-backend; "": the default, see package backend).
	Backend string `json:"-"`
	// Devices splits each batch over this many devices of Backend (-devices; 0 or 1: one):
	// data parallelism with the result of one device (train.Config.Devices).
	Devices int `json:"-"`
	// Quiet turns the trainer's progress bar off (-quiet).
	Quiet bool `json:"-"`
	// Args are the command line's flags recorded in run.json beside the typed configuration
	// (nil: the configuration's, rundir.ConfigArgs).
	Args map[string]string `json:"-"`
	// Stdout receives the test report, Stderr the messages (nil: os.Stdout, os.Stderr). The
	// trainer's progress bar goes to os.Stderr.
	Stdout, Stderr io.Writer `json:"-"`
}

// TrainSplit is the data a run trains and selects on.
type TrainSplit struct {
	// Data is the dataset directory (-data; "": the embedded default dataset).
	Data string `json:"data" help:"dataset directory (BEIR or Parquet layout), or a list of libraries ENTRY[:WEIGHT],... (a directory, a name in $TOOLRET_DATASETS, or DATASET/SOURCE), each batch from one; default: the embedded default dataset"`
	// HoldoutTools and HoldoutSeed select the held-out-tool view of Data (-holdout-tools,
	// -holdout-seed; 0: the dataset's own splits, auto: the Retriever run's view).
	HoldoutTools float64 `json:"holdout-tools" help:"hold out this fraction of the judged tools (seeded by -holdout-seed) to evaluate on tools never seen in training: every query that needs a held-out tool is a test query, the others train (a multi-tool query with any held-out tool goes to test, its seen tools stay relevant there); the dev split is then carved the same way from the training tools (-dev of them); 0: the dataset's own splits. A later stage given a -first-stage run trained on a view takes the run's view"`
	HoldoutSeed  uint64  `json:"holdout-seed" help:"random seed of -holdout-tools"`
	// Dev is the fraction of the training queries carved as the dev split (-dev; 0: auto,
	// 0.1, or with Parent.Feedback or Parent.Retriever the parent run's recorded split, which
	// a non-zero Dev must equal).
	Dev float64 `json:"dev" help:"fraction of the training queries held out as the dev split (model selection); 0: auto, 0.1, or with -feedback or -first-stage the run's recorded split"`
	// Test is the split evaluated at the end (-test; default "test", "": none; with
	// Usage or Synthetic, none when Data has no such split).
	Test string `json:"test" help:"split evaluated at the end (empty: none)"`
	// Usage is a gateway's usage log (-usage; package usage): its examples (the query of
	// each search with the tools called from it as positives and the tools shown and not
	// called as hard negatives, used when Training.HardNegatives > 0) replace Data's
	// training split. The examples are snapshotted into the run (examples.jsonl), so a
	// resumed run trains on the same ones.
	Usage string `json:"usage" help:"train on a gateway's usage log (serve -library: STATE/usage.jsonl; with serve -database: that postgres:// URL, its usage_log table): each search's query with the tools called from it successfully (or reported a success on) as positives and the tools shown and not called as hard negatives (-hard-negatives, default 1 with -usage) replace -data's training split; failed calls are not positives; docs/learning-from-use.md"`
	// Synthetic is the number of synthetic queries per tool of Data made from its tool
	// definitions (-synthetic; package synth), added to the training examples (with Usage)
	// or replacing Data's training split: by templates, seeded with Training.Seed, or by
	// the LLM at SyntheticLLM (an OpenAI-compatible base URL, -synthetic-llm; model
	// SyntheticLLMModel, -synthetic-llm-model; key from $TOOLRET_LLM_API_KEY) when set.
	Synthetic         int    `json:"synthetic" help:"cold start: this many synthetic queries per tool of -data, made from its definitions (name, description, parameters) by templates seeded with -seed, or by -synthetic-llm; they replace -data's training split (or join -usage's examples)"`
	SyntheticLLM      string `json:"synthetic-llm" help:"-synthetic: an OpenAI-compatible base URL (e.g. http://127.0.0.1:8080/v1) whose LLM writes the queries instead of the templates (key from $TOOLRET_LLM_API_KEY)"`
	SyntheticLLMModel string `json:"synthetic-llm-model" help:"-synthetic-llm: the model name sent"`
}

// TrainParent names what a run starts from or builds on.
type TrainParent struct {
	// Init initialises the encoder (-init): a HuggingFace or sentence-transformers BERT or
	// DeBERTa-v2/v3 directory or hub id org/name[@revision] (resolved in the hub cache), or a
	// trained bi-encoder or pretrain run; "": from scratch (Model's sizes).
	Init string `json:"init" help:"initialise from a HuggingFace or sentence-transformers BERT or DeBERTa-v2/v3 directory or hub id org/name[@revision] (lr 2e-5 and the model's pooling unless given), or from a trained bi-encoder run (its shared encoder, tokenizer, pooling and similarity; else from scratch); with -separate-towers both towers start from it"`
	// Retriever is the first retriever run (-first-stage): query2query mines its triplets by
	// its query embeddings and takes its dev split; with Feedback it names the collection's
	// retriever when it moved.
	Retriever string `json:"retriever" flag:"first-stage" help:"stage-1 bi-encoder run (train biencoder); its recorded dev split is used"`
	// Feedback is a feedback collection (-feedback, train feedback -out FILE): the run trains
	// iteration-aware on it.
	Feedback string `json:"feedback" help:"train iteration-aware on a feedback collection (train feedback -out FILE): every instruction q^0..q^T of the training queries, marked with -marker; the dev split is the collection's -first-stage run's (give -first-stage to name it when it moved)"`
}

// TrainModel is the model: the encoder from scratch, the towers and the objective.
type TrainModel struct {
	// Arch is the architecture from scratch (-arch: bert, deberta or wordbag; "": auto, bert,
	// and no check of an Init encoder's).
	Arch         string `json:"arch" help:"from scratch: encoder architecture, bert, deberta (DeBERTa-v3: disentangled attention over log-bucketed relative positions) or wordbag (idf-weighted bag of word vectors, -hidden wide, no layers; bi-encoders only); default: bert, and an -init encoder's is not checked"`
	Vocab        string `json:"vocab" help:"from scratch: a vocab.txt (default: build a WordPiece vocab from the training texts)"` // -vocab: a vocab.txt ("": built from the training texts)
	VocabSize    int    `json:"vocab-size" help:"from scratch: size of the built vocabulary"`                                      // -vocab-size (default 8000)
	Layers       int    `json:"layers" help:"from scratch: layers"`                                                                // -layers (default 2)
	Hidden       int    `json:"hidden" help:"from scratch: hidden size"`                                                           // -hidden (default 128)
	Heads        int    `json:"heads" help:"from scratch: attention heads"`                                                        // -heads (default 4)
	Intermediate int    `json:"intermediate" help:"from scratch: intermediate size (default 4*hidden)"`                            // -intermediate (default 0: 4*Hidden)
	// Pooling is cls, mean or pooler (-pooling; "": auto, the Init model's, else mean).
	Pooling        string `json:"pooling" help:"cls, mean or pooler (default: the -init model's, else mean)"`
	SeparateTowers bool   `json:"separate-towers" help:"separate query and tool towers (default: shared)"` // -separate-towers: a query and a tool tower
	QueryLen       int    `json:"query-len" help:"max query tokens"`                                       // -query-len: max query tokens (default 32)
	ToolLen        int    `json:"tool-len" help:"max tool tokens"`                                         // -tool-len: max tool tokens (default 64)
	// Similarity is cosine or dot (-similarity; "": auto, an Init run's, else cosine).
	Similarity  string  `json:"similarity" help:"cosine or dot (default: an -init run's, else cosine)"`
	Temperature float64 `json:"temperature" help:"InfoNCE temperature"`                // -temperature: InfoNCE temperature (default 0.05)
	Symmetric   bool    `json:"symmetric" help:"add the tool->query InfoNCE term"`     // -symmetric: add the tool->query InfoNCE term
	NoFNMask    bool    `json:"no-fn-mask" help:"ablation: no false-negative masking"` // -no-fn-mask: ablation, no false-negative masking
	// Objective is query2tool (default) or query2query (-objective).
	Objective string  `json:"objective" help:"query2tool (InfoNCE between queries and tool texts) or query2query (the Tool2Vec retriever: triplet loss over training queries; tools are their usage vectors)"`
	Margin    float64 `json:"margin" help:"query2query: triplet loss margin (Euclidean distance)"` // -margin: query2query's triplet margin (default 1)
	// Marker is the iteration marker of Feedback training (-marker, default DefaultMarker).
	Marker string `json:"marker" help:"-feedback: the iteration marker, a format with one %d, put before q^t in training and in the iterative retrieval (empty: none)"`
	// QueryPrompt and ToolPrompt are put before every query and tool text, in training and
	// after it (-query-prompt, -tool-prompt; Config.QueryPrompt). nil: auto, the Init model's
	// (a sentence-transformers directory's "query" and "document" prompts, a run's prompts),
	// else none.
	QueryPrompt *string `json:"query-prompt,omitempty" help:"put before every query, in training and by the trained model (sentence-transformers' \"query\" prompt, e.g. bge's query instruction; default: the -init model's, else none; \"\" for none)"`
	ToolPrompt  *string `json:"tool-prompt,omitempty" help:"put before every tool text, in training and by the trained model (sentence-transformers' \"document\" prompt, e.g. e5's \"passage: \"; default: the -init model's, else none)"`
	// LoRA trains low-rank adapters of the encoder's Linear layers instead of the whole
	// encoder (Config.LoRA): LoRARank is their rank (-lora-rank; 0: off, full fine-tuning),
	// LoRAAlpha the update's scale alpha/rank (-lora-alpha; 0: auto, 2×rank), LoRADropout the
	// dropout on their input (-lora-dropout) and LoRATargets the comma-separated module names
	// adapted, as PEFT's target_modules name them (-lora-targets; "": auto, the encoder's
	// query and value projections: query,value for BERT and XLM-RoBERTa, q,v for MPNet).
	LoRARank    int     `json:"lora-rank,omitempty" help:"train LoRA adapters of this rank on the encoder's -lora-targets instead of the whole encoder (base weights frozen; export merges them unless -lora-export adapter); 0: off, full fine-tuning"`
	LoRAAlpha   float64 `json:"lora-alpha,omitempty" help:"LoRA: the update's scale is alpha/rank (0: auto, 2×rank)"`
	LoRADropout float64 `json:"lora-dropout,omitempty" help:"LoRA: dropout on the adapters' input"`
	LoRATargets string  `json:"lora-targets,omitempty" help:"LoRA: comma-separated Linear modules adapted, PEFT's target_modules names (BERT, XLM-RoBERTa: query, key, value, dense; MPNet: q, k, v, o, dense; default: the query and value projections)"`
}

// CheckLoRA checks the LoRA fields that need no encoder (LoRA checks the rest): the errors
// name the flags.
func (m TrainModel) CheckLoRA() error {
	switch {
	case m.LoRARank < 0:
		return fmt.Errorf("-lora-rank %d: must be >= 0 (0: no LoRA)", m.LoRARank)
	case m.LoRARank == 0 && (m.LoRAAlpha != 0 || m.LoRADropout != 0 || m.LoRATargets != ""):
		return fmt.Errorf("-lora-alpha, -lora-dropout and -lora-targets need -lora-rank > 0")
	case m.LoRAAlpha < 0 || math.IsNaN(m.LoRAAlpha) || math.IsInf(m.LoRAAlpha, 0):
		return fmt.Errorf("-lora-alpha %v: must be > 0 (0: auto, 2×rank)", m.LoRAAlpha)
	case !(m.LoRADropout >= 0 && m.LoRADropout < 1):
		return fmt.Errorf("-lora-dropout %v: a probability, must be in [0, 1)", m.LoRADropout)
	}
	return nil
}

// LoRA returns the adapter configuration of the run for the encoder enc (nil without LoRA),
// its auto fields resolved: alpha 2×rank, the encoder's default targets. The errors name the
// flags.
func (m TrainModel) LoRA(enc encoder.Config) (*encoder.LoRA, error) {
	if err := m.CheckLoRA(); err != nil || m.LoRARank == 0 {
		return nil, err
	}
	valid, def, err := encoder.LoRAModules(enc)
	if err != nil {
		return nil, fmt.Errorf("-lora-rank %d: %w", m.LoRARank, err)
	}
	l := encoder.LoRA{Rank: m.LoRARank, Alpha: m.LoRAAlpha, Dropout: m.LoRADropout, Targets: def}
	if l.Alpha == 0 {
		l.Alpha = 2 * float64(l.Rank)
	}
	if m.LoRATargets != "" {
		l.Targets = nil
		for _, t := range strings.Split(m.LoRATargets, ",") {
			l.Targets = append(l.Targets, strings.TrimSpace(t))
		}
	}
	if err := l.Validate(valid); err != nil {
		return nil, fmt.Errorf("-lora-rank %d, -lora-alpha %v, -lora-dropout %v, -lora-targets %q: %w", m.LoRARank, m.LoRAAlpha, m.LoRADropout, m.LoRATargets, err)
	}
	return &l, nil
}

// TrainSchedule is the trainer's knobs.
type TrainSchedule struct {
	Batch         int  `json:"batch" help:"examples per batch (no two share a query or a tool, when possible)"`          // -batch: examples per batch (default 32)
	StrictBatches bool `json:"strict-batches" help:"never repeat a query or tool in a batch, even if batches get small"` // -strict-batches: never repeat a query or tool in a batch
	// PadMultiple pads each batch to its longest text rounded up to a multiple of it
	// (-pad-multiple, default DefaultPadMultiple; 0: to QueryLen/ToolLen); -1 is the
	// tokenizer's length buckets of runs made before the flag (migrated runs only).
	PadMultiple int `json:"pad-multiple" help:"pad each batch's queries and tools to their longest text rounded up to a multiple of this (0: to -query-len/-tool-len)"`
	Epochs      int `json:"epochs" help:"epochs"` // -epochs (default 4)
	// LR is the peak learning rate (-lr; 0: auto, 2e-5 with pre-trained Init weights, else 5e-4).
	LR          float64 `json:"lr" help:"peak learning rate (default: 2e-5 with pre-trained -init weights, else 5e-4 from scratch)"`
	WeightDecay float64 `json:"weight-decay" help:"AdamW weight decay (not on biases and LayerNorm)"` // -weight-decay: AdamW (default 0.01)
	Warmup      float64 `json:"warmup" help:"warmup fraction of the steps"`                           // -warmup: fraction of the steps (default 0.1)
	Schedule    string  `json:"schedule" help:"linear, cosine or constant"`                           // -schedule: linear (default), cosine or constant
	Clip        float64 `json:"clip" help:"global gradient-norm clipping (0: off)"`                   // -clip: gradient-norm clipping (default 1; 0: off)
	Accumulate  int     `json:"accumulate" help:"micro-batches per optimizer step"`                   // -accumulate: micro-batches per step (default 1)
	// MiniBatch encodes each batch this many rows at a time (-mini-batch; 0: whole): GradCache,
	// the same optimizer step in the memory of a mini-batch (Task.MiniBatchSize).
	MiniBatch int `json:"mini-batch" help:"encode each batch this many rows at a time (GradCache, as sentence-transformers' CachedMultipleNegativesRankingLoss: the same step in a mini-batch's memory, one more forward pass; 0: the whole batch)"`
	// FreezeEmbeddings and ToolDropout regularise query2tool and feedback training
	// (-freeze-embeddings, -tool-dropout; see Regularization).
	FreezeEmbeddings bool    `json:"freeze-embeddings" help:"query2tool/feedback: do not train the encoder's word (token) embedding table, in every tower (no gradient, optimizer state or weight decay; left out of the clipped gradient norm); position and token-type embeddings still train"`
	ToolDropout      float64 `json:"tool-dropout" help:"query2tool/feedback, training only: drop each white-space-separated word of a tool text (positives and hard negatives) with this probability before tokenisation, at least one word kept, drawn anew per (seed, epoch, batch, example); dev/test evaluation and encoding see whole texts"`
	// FreezeTower locks one of the separate towers (-freeze-tower query or tool; "": none;
	// Regularization.FreezeTower).
	FreezeTower string `json:"freeze-tower" help:"query2tool/feedback with -separate-towers: lock the query or the tool tower at its initial weights (no training, no dropout, no gradient through it; LiT's locked tower). -freeze-tower tool keeps tools embedded as the -init model embeds them, so a tool added after training is embedded like the trained ones"`
	// ToolQueries is pseudo (query, tool) pairs per tool and epoch (-tool-queries; 0: none).
	ToolQueries int `json:"tool-queries" help:"query2tool, training only: each epoch, besides the real (query, tool) pairs, this many pseudo pairs per tool of the data, EVERY tool with a text (held-out and dev tools included: tool texts are known when the index is built; no test or dev query is used), whose query is drawn from the tool's own text (its name, or a random span of 10-50% of its description's words, at least 3) anew per (seed, epoch, pair), and whose positive is the tool; batched with the real pairs (0: none)"`
	// HardNegatives is mined hard negatives per example from the Negatives file
	// (-hard-negatives, -negatives: train mine's output).
	HardNegatives int    `json:"hard-negatives" help:"mined hard negatives per example (needs -negatives)"`
	Negatives     string `json:"negatives" help:"mined negatives file (train mine)"`
	// Feedback training (Parent.Feedback): the last iteration trained (-iterations; 0: the
	// collection's), the loss weight alpha^t (-alpha, default 1), every iteration of a query
	// in its batch (-feedback-joint, default true) and one hard negative per instruction
	// (-feedback-hard-negatives, default true).
	Iterations            int     `json:"iterations" help:"-feedback: the last iteration T trained (0: the collection's -iterations)"`
	Alpha                 float64 `json:"alpha" help:"-feedback: the loss is Σ_t alpha^t · InfoNCE(q^t)"`
	FeedbackJoint         bool    `json:"feedback-joint" help:"-feedback: train every iteration of a query in its batch (false: its last instruction only, an ablation)"`
	FeedbackHardNegatives bool    `json:"feedback-hard-negatives" help:"-feedback: one hard negative per instruction from the incorrect tools of its recorded top K (false: in-batch negatives only, an ablation)"`
	// query2query: nearest training queries kept per anchor sharing a tool
	// (-positives-per-query, default 4) and sharing none (-negatives-per-query, default 4).
	PositivesPerQuery int `json:"positives-per-query" help:"query2query: nearest training queries sharing a tool kept per anchor (one example each)"`
	NegativesPerQuery int `json:"negatives-per-query" help:"query2query: nearest training queries sharing no tool kept per anchor (one drawn per example and epoch)"`
	EvalEvery         int `json:"eval-every" help:"optimizer steps between dev evaluations (0: each epoch)"` // -eval-every: steps between dev evaluations (0: each epoch)
	// MaxSteps stops after this many optimizer steps, the schedule fitted to them
	// (-max-steps; 0: all of Epochs).
	MaxSteps int `json:"max-steps" help:"stop after this many optimizer steps, the learning-rate schedule fitted to them (0: all of -epochs)"`
	// MaxTime stops at the first optimizer step past this wall-clock time since training
	// began, evaluated and checkpointed there (-max-time; 0: no limit; train.Config.MaxTime).
	MaxTime  time.Duration `json:"-" flag:"max-time" help:"stop at the first optimizer step past this wall-clock time since training began, e.g. 4m (evaluated and checkpointed there; the schedule keeps its length; 0: no limit)"`
	Metric   string        `json:"metric" help:"dev metric selecting the best checkpoint: recall@K, ndcg@K or comp@K with K in 1,3,5,10"` // -metric: dev metric selecting the best checkpoint (default ndcg@5)
	Patience int           `json:"patience" help:"stop after this many evaluations without improvement (0: never)"`                       // -patience: evaluations without improvement (0: never stop)
	Seed     uint64        `json:"seed" help:"random seed"`                                                                               // -seed: the dev split's and the training's (default 1)
	// Precision is the encoder's computation (-precision): fp32 (default), bf16 (mixed
	// precision: the matrix multiplications in bfloat16, the weights, LayerNorm, softmax,
	// loss and AdamW state in float32) or auto (bf16 where the backend multiplies bfloat16
	// natively, backend.NativeBF16; else fp32). run.json records the precision taken.
	Precision string `json:"precision" help:"fp32, bf16 (mixed precision: matrix multiplications in bfloat16, weights, LayerNorm, softmax, loss and AdamW state in float32; transformer encoders (not wordbag); xla and go backends, not onnx) or auto (bf16 where the backend has native bfloat16 matmul: xla:cuda, xla:cpu on an AMX (amx_bf16) CPU; else fp32)"`
}

// ResolvePrecision returns the precision s runs at on the backend name (auto resolved), the
// encoder's compute dtype (Config.Compute) and a line saying which was chosen and why. The
// errors name -precision.
func (s TrainSchedule) ResolvePrecision(backendName string) (string, dtypes.DType, string, error) {
	p := s.Precision
	if p == "" {
		p = backend.FP32
	}
	return backend.ResolvePrecision("-precision", p, backendName)
}

// DefaultTrainConfig returns the defaults of train biencoder's flags: a small BERT from
// scratch on the embedded default dataset. RunDir must still be set.
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{
		Split: TrainSplit{HoldoutSeed: 1, Test: "test"},
		Model: TrainModel{VocabSize: 8000, Layers: 2, Hidden: 128, Heads: 4, QueryLen: 32, ToolLen: 64,
			Temperature: 0.05, Objective: ObjectiveQuery2Tool, Margin: 1, Marker: DefaultMarker},
		Training: TrainSchedule{Batch: 32, PadMultiple: DefaultPadMultiple, Epochs: 4, WeightDecay: 0.01, Warmup: 0.1,
			Schedule: "linear", Clip: 1, Accumulate: 1, Alpha: 1, FeedbackJoint: true, FeedbackHardNegatives: true,
			PositivesPerQuery: 4, NegativesPerQuery: 4, Metric: "ndcg@5", Seed: 1, Precision: backend.FP32},
	}
}

// ConfigFromArgs migrates a run's recorded flags (rundir.Meta.Args of a format-1 run) to
// its typed configuration: flags it lacks keep their defaults, except -pad-multiple, which
// a run made before the flag existed lacks: it trained with the tokenizer's buckets (-1).
func ConfigFromArgs(args map[string]string) (TrainConfig, error) {
	c := DefaultTrainConfig()
	if err := rundir.ConfigFromArgs(&c, args); err != nil {
		return c, err
	}
	if _, ok := args["pad-multiple"]; !ok {
		c.Training.PadMultiple = -1
	}
	return c, nil
}

// RecordedConfig returns the typed configuration of the bi-encoder run at dir (migrated from
// its flags for a format-1 run), ready to resume: Resume and RunDir are set.
func RecordedConfig(dir string) (TrainConfig, error) {
	m, err := rundir.Read(dir)
	if err != nil {
		return TrainConfig{}, err
	}
	return RecordedConfigOf(dir, m)
}

// RecordedConfigOf is RecordedConfig of the run at dir whose run.json m is read.
func RecordedConfigOf(dir string, m *rundir.Meta) (TrainConfig, error) {
	if m.Kind != Kind {
		return TrainConfig{}, fmt.Errorf("run %s: a %s run, not a bi-encoder run", dir, m.Kind)
	}
	c := DefaultTrainConfig()
	_, err := m.DecodeConfig(&c, func(args map[string]string) (err error) {
		c, err = ConfigFromArgs(args)
		return err
	})
	if err != nil {
		return TrainConfig{}, fmt.Errorf("run %s: %w", dir, err)
	}
	c.RunDir, c.Resume = dir, true
	return c, nil
}

// Padding returns the Padding of PadMultiple (-1: PadTokenizer).
func (s TrainSchedule) Padding() (Padding, error) {
	if s.PadMultiple == -1 {
		return PadTokenizer, nil
	}
	return PadMultiple(s.PadMultiple)
}

// CheckResume compares c, the configuration of a resumption of the run at c.RunDir, with the
// run's recorded configuration rec, and returns rec with c's operational fields (RunDir,
// Backend, Devices, Quiet, Args, writers): an error names every field that differs, but for the auto
// fields (lr, pooling, similarity, arch, dev, holdout-tools, lora-alpha, lora-targets, and
// precision auto) c
// leaves at zero.
func (c TrainConfig) CheckResume(rec TrainConfig) (TrainConfig, error) {
	g := c
	if g.Training.LR == 0 {
		g.Training.LR = rec.Training.LR
	}
	if g.Model.Pooling == "" {
		g.Model.Pooling = rec.Model.Pooling
	}
	if g.Model.Similarity == "" {
		g.Model.Similarity = rec.Model.Similarity
	}
	if g.Model.Arch == "" {
		g.Model.Arch = rec.Model.Arch
	}
	if g.Model.QueryPrompt == nil {
		g.Model.QueryPrompt = rec.Model.QueryPrompt
	}
	if g.Model.ToolPrompt == nil {
		g.Model.ToolPrompt = rec.Model.ToolPrompt
	}
	if g.Split.Dev == 0 {
		g.Split.Dev = rec.Split.Dev
	}
	if g.Model.LoRAAlpha == 0 {
		g.Model.LoRAAlpha = rec.Model.LoRAAlpha
	}
	if g.Model.LoRATargets == "" {
		g.Model.LoRATargets = rec.Model.LoRATargets
	}
	if g.Training.Precision == backend.AutoPrecision {
		g.Training.Precision = rec.Training.Precision
	}
	if g.Split.HoldoutTools == 0 {
		g.Split.HoldoutTools, g.Split.HoldoutSeed = rec.Split.HoldoutTools, rec.Split.HoldoutSeed
	}
	if err := rundir.ConfigDiffError(c.RunDir, rundir.ConfigDiff(rec, g)); err != nil {
		return c, err
	}
	rec.RunDir, rec.Resume, rec.Backend, rec.Devices, rec.Quiet, rec.Args, rec.Stdout, rec.Stderr = c.RunDir, true, c.Backend, c.Devices, c.Quiet, c.Args, c.Stdout, c.Stderr
	return rec, nil
}

// Package evaluate evaluates tool-retrieval methods on a dataset split, as cmd/eval does:
// it loads any trained run as a ranker (LoadRun), builds and tunes the ToolRerank pipeline
// over a retriever, a cross-encoder and a query-type classifier (RerankConfig, eval -method
// rerank and rerank-m as typed fields: Setup, Ranker; below it NewRerank, Rerank.Tune,
// Ablations), replays or runs the iterative retrieval round by round (Replay, Live,
// EvaluateRounds), and records rankings as TREC runs (Recorder, RunResults). Metrics come
// from package metrics, fusion from package fusion.
//
// Every function takes an options struct; progress lines go to its Log writer (nil: none).
package evaluate

import (
	"fmt"
	"io"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/kinds"
	_ "github.com/toolret/toolret/kinds/all" // the kinds a run may be of register themselves
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rank"
)

// RunOptions are how LoadRun loads a run.
type RunOptions struct {
	Backend compute.Backend
	// Vectors are a bi-encoder's tool vectors: "text" (its tool tower) or "usage" (Tool2Vec:
	// the mean embedding of the training queries using each tool).
	Vectors string
	// Train is the split whose queries give usage vectors (nil: the dataset's train split).
	Train *data.Split
	// Log receives notes such as the tools usage vectors left at their text vector.
	Log io.Writer
	// QueryLen and ToolLen, when not 0, replace a bi-encoder run's maximum tokens per query and
	// per tool text (its training lengths); a run of another kind with either set is an error.
	QueryLen, ToolLen int
}

// LoadRun loads the trained run (or checkpoint) at dir as a ranker of d's tools, whatever
// its kind: an mlc classifier, a refiner pipeline, COLT, or else a bi-encoder with o.Vectors
// tool vectors. It also returns a description ("run DIR (...)"). An iteration-aware
// bi-encoder's ranker is a Marked one: it ranks every query as round 0's instruction.
func LoadRun(dir string, d *data.Dataset, o RunOptions) (rank.QueryRanker, string, error) {
	desc := "run " + dir
	// The kinds that rank on their own (an mlc classifier, a refiner pipeline, COLT) load
	// through the registry; bi-encoders (and the kinds that rank as one) below, with o.Vectors.
	if k, err := kinds.Of(dir); err == nil && k.Rank != nil && k.Name != biencoder.Kind && k.Base != biencoder.Kind {
		if o.QueryLen != 0 || o.ToolLen != 0 {
			return nil, "", fmt.Errorf("run %s: query and tool lengths apply to a bi-encoder run, not to a %s run", dir, k.Name)
		}
		r, err := k.Rank(dir, o.Backend, d)
		if err != nil {
			return nil, "", err
		}
		return rank.Texts(r), desc, nil
	}
	emb, err := biencoder.LoadRun(dir, o.Backend)
	if err != nil {
		return nil, "", err
	}
	if o.QueryLen != 0 || o.ToolLen != 0 {
		if err := emb.SetLengths(o.QueryLen, o.ToolLen); err != nil {
			return nil, "", fmt.Errorf("run %s: %w", dir, err)
		}
		desc += fmt.Sprintf(" (lengths query %d, tool %d)", emb.Cfg.QueryMaxLen, emb.Cfg.ToolMaxLen)
	}
	var r *biencoder.Ranker
	if o.Train == nil {
		r, err = emb.Ranker(d, o.Vectors, "train")
	} else {
		r, err = emb.RetrieverFrom(d, o.Vectors, o.Train)
	}
	if err != nil {
		return nil, "", err
	}
	if n := r.UsageNote(); n != "" && o.Log != nil {
		fmt.Fprintln(o.Log, n)
	}
	if m := r.Marker(); m != "" { // iteration-aware: round 0's instructions
		return Marked{rank.Texts(r), m}, desc + " (" + o.Vectors + " tool vectors, iteration marker " + fmt.Sprintf("%q", m) + ")", nil
	}
	return rank.Texts(r), desc + " (" + o.Vectors + " tool vectors)", nil
}

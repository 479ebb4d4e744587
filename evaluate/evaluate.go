// Package evaluate evaluates tool-retrieval methods on a dataset split, as cmd/eval does:
// it loads any trained run as a ranker (LoadRun), builds and tunes the ToolRerank pipeline
// over a retriever, a cross-encoder and a query-type classifier (NewRerank, Rerank.Tune,
// Ablations), replays or runs the iterative retrieval round by round (Replay, Live,
// EvaluateRounds), and records rankings as TREC runs (Recorder, RunResults). Metrics come
// from package metrics, fusion from package fusion.
//
// Every function takes an options struct; progress lines go to its Log writer (nil: none).
package evaluate

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/models/colt"
	"github.com/toolret/toolret/models/refiner"
	"github.com/toolret/toolret/retrieve"
	"github.com/toolret/toolret/rundir"
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
}

// runLoaders load the kinds of run other than bi-encoders as rankers, by the configuration
// file found in the run directory or its best checkpoint (rundir.FindConfig), in this order.
var runLoaders = []struct {
	file string
	load func(dir string, be compute.Backend, d *data.Dataset) (retrieve.Ranker, error)
}{
	{classifier.ConfigFile, func(dir string, be compute.Backend, d *data.Dataset) (retrieve.Ranker, error) {
		m, err := classifier.LoadRun(dir, be)
		if err != nil {
			return nil, err
		}
		return classifier.NewRanker(m, d)
	}},
	// A refiner run ranks with its recorded first stage followed by the refiner.
	{refiner.ConfigFile, func(dir string, be compute.Backend, d *data.Dataset) (retrieve.Ranker, error) {
		return refiner.LoadPipeline(dir, d, be)
	}},
	// A COLT run ranks with its recorded stage-1 bi-encoder and its trained graph stage
	// (colt.json is kept in the checkpoints only).
	{colt.ConfigFile, func(dir string, be compute.Backend, d *data.Dataset) (retrieve.Ranker, error) {
		return colt.LoadRun(dir, d, be)
	}},
}

// LoadRun loads the trained run (or checkpoint) at dir as a ranker of d's tools, whatever
// its kind: an mlc classifier, a refiner pipeline, COLT, or else a bi-encoder with o.Vectors
// tool vectors. It also returns a description ("run DIR (...)"). An iteration-aware
// bi-encoder's ranker is a Marked one: it ranks every query as round 0's instruction.
func LoadRun(dir string, d *data.Dataset, o RunOptions) (retrieve.QueryRanker, string, error) {
	desc := "run " + dir
	files := make([]string, len(runLoaders))
	for i, l := range runLoaders {
		files[i] = l.file
	}
	if p, ok := rundir.FindConfig(dir, files...); ok {
		for _, l := range runLoaders {
			if filepath.Base(p) == l.file {
				r, err := l.load(dir, o.Backend, d)
				if err != nil {
					return nil, "", err
				}
				return retrieve.Texts(r), desc, nil
			}
		}
	}
	emb, err := biencoder.LoadRun(dir, o.Backend)
	if err != nil {
		return nil, "", err
	}
	var r *biencoder.Retriever
	if o.Train == nil {
		r, err = emb.Retriever(d, o.Vectors, "train")
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
		return Marked{retrieve.Texts(r), m}, desc + " (" + o.Vectors + " tool vectors, iteration marker " + fmt.Sprintf("%q", m) + ")", nil
	}
	return retrieve.Texts(r), desc + " (" + o.Vectors + " tool vectors)", nil
}

package biencoder

import (
	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/rank"
)

func init() {
	kinds.Register(kinds.Kind{Name: Kind, Help: "train a bi-encoder tool retriever (from scratch, a run, or a pre-trained model with -init)",
		ConfigFile: ConfigFile,
		NewConfig:  func() any { c := DefaultTrainConfig(); return &c },
		FromArgs:   func(args map[string]string) (any, error) { c, err := ConfigFromArgs(args); return &c, err },
		Rank:       rankRun})
}

// rankRun opens a bi-encoder run as a ranker with text tool vectors (an iteration-aware run:
// round 0's, its queries marked).
func rankRun(dir string, be compute.Backend, d *data.Dataset) (rank.Ranker, error) {
	emb, err := LoadRun(dir, be)
	if err != nil {
		return nil, err
	}
	r, err := emb.Ranker(d, "text", "train")
	if err != nil {
		return nil, err
	}
	if m := r.Marker(); m != "" {
		return Marked{R: r, Marker: m}, nil
	}
	return r, nil
}

package encoder

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
)

// Loaded is a trained model read back by LoadRun: its configuration, tokenizer and weights.
type Loaded[C any] struct {
	Dir   string // the checkpoint directory
	Cfg   C
	Tok   *tokenize.Tokenizer
	Store *model.Store
}

// LoadRun loads the checkpoint at path (a run directory's best, or a checkpoint directory)
// of a model kind whose configuration is stored as file: the configuration, decoded by
// unmarshal; the tokenizer, which must fit the configuration's encoder (enc); and the
// weights, restored into a new store on be. Errors in the configuration and the vocabulary
// name the checkpoint directory.
func LoadRun[C any](path, file string, be compute.Backend, unmarshal func([]byte) (C, error), enc func(C) Config) (*Loaded[C], error) {
	c, cb, tok, err := rundir.LoadCheckpoint(path, file)
	if err != nil {
		return nil, err
	}
	cfg, err := unmarshal(cb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Dir, err)
	}
	if err := FitVocab(tok, enc(cfg)); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Dir, err)
	}
	store := model.NewStore()
	if err := c.Restore(store, be); err != nil {
		return nil, err
	}
	return &Loaded[C]{Dir: c.Dir, Cfg: cfg, Tok: tok, Store: store}, nil
}

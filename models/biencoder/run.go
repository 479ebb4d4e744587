package biencoder

import (
	"fmt"
	"sync"

	"github.com/toolret/toolret/models/encoder"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
)

// ConfigFile is the name of the bi-encoder configuration in runs and checkpoints.
const ConfigFile = "biencoder.json"

// WriteRunFiles stores the model configuration and tokenizer at the top of a run directory
// and returns the files to keep in every checkpoint.
func WriteRunFiles(runDir string, cfg *Config, tok *tokenize.Tokenizer) (map[string][]byte, error) {
	return rundir.WriteModelFiles(runDir, ConfigFile, cfg.Marshal(), tok)
}

// LoadRun loads a trained bi-encoder from a run directory (its best checkpoint) or from one
// checkpoint directory, ready to embed.
func LoadRun(path string, be compute.Backend) (*Embedder, error) {
	c, cb, tok, err := rundir.LoadCheckpoint(path, ConfigFile)
	if err != nil {
		return nil, err
	}
	dir := c.Dir
	cfg, err := Unmarshal(cb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if err := encoder.CheckVocab(tok.VocabSize(), cfg.Encoder); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	store := model.NewStore()
	if err := c.Restore(store, be); err != nil {
		return nil, err
	}
	return &Embedder{Cfg: cfg, Tok: tok, Backend: be, Store: store, Batch: 64}, nil
}

var embedMu sync.Mutex

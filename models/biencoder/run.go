package biencoder

import (
	"fmt"
	"sync"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/models/encoder"
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
// checkpoint directory, ready to embed. A run trained with LoRA has its adapters merged into
// the base weights (Embedder.MergeLoRA; what was merged is kept in Embedder.Adapter).
func LoadRun(path string, be compute.Backend) (*Embedder, error) {
	r, err := encoder.LoadRun(path, ConfigFile, be, Unmarshal, func(c *Config) encoder.Config { return c.Encoder })
	if err != nil {
		return nil, err
	}
	e := &Embedder{Cfg: r.Cfg, Tok: r.Tok, Backend: be, Store: r.Store, Batch: 64}
	if e.Adapter, err = e.MergeLoRA(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}

var embedMu sync.Mutex

package biencoder

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/tokenize"
)

// ConfigFile is the name of the bi-encoder configuration in runs and checkpoints.
const ConfigFile = "biencoder.json"

// WriteRunFiles stores the model configuration and tokenizer at the top of a run directory
// and returns the files to keep in every checkpoint.
func WriteRunFiles(runDir string, cfg *Config, tok *tokenize.Tokenizer) (map[string][]byte, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, err
	}
	if err := tok.Save(runDir); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(runDir, ConfigFile), cfg.Marshal(), 0o644); err != nil {
		return nil, err
	}
	files := map[string][]byte{ConfigFile: cfg.Marshal()}
	for _, f := range []string{"tokenizer.json", "vocab.txt", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(runDir, f))
		if err != nil {
			return nil, err
		}
		files[f] = b
	}
	return files, nil
}

// BestCheckpoint returns the directory of a run's best checkpoint (the newest one when no
// best was recorded).
func BestCheckpoint(runDir string) (string, error) {
	steps, err := checkpoints.List(runDir)
	if err != nil {
		return "", err
	}
	if len(steps) == 0 {
		return "", fmt.Errorf("run %s: no checkpoints", runDir)
	}
	last := checkpoints.Dir(runDir, steps[len(steps)-1])
	b, err := os.ReadFile(filepath.Join(last, "state.json"))
	if err != nil {
		return "", fmt.Errorf("run %s: %w", runDir, err)
	}
	var m struct {
		Extra struct {
			Best struct {
				Step int `json:"step"`
			} `json:"best"`
		} `json:"extra"`
	}
	if err := json.Unmarshal(b, &m); err == nil && m.Extra.Best.Step > 0 {
		for _, s := range steps {
			if s == m.Extra.Best.Step {
				return checkpoints.Dir(runDir, s), nil
			}
		}
	}
	return last, nil
}

// LoadRun loads a trained bi-encoder from a run directory (its best checkpoint) or from one
// checkpoint directory, ready to embed.
func LoadRun(path string, be compute.Backend) (*Embedder, error) {
	dir := path
	if _, err := os.Stat(filepath.Join(path, "state.json")); err != nil {
		var err error
		if dir, err = BestCheckpoint(path); err != nil {
			return nil, err
		}
	}
	c, err := checkpoints.Load(dir)
	if err != nil {
		return nil, err
	}
	cb, err := c.File(ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("%s is not a bi-encoder checkpoint: %w", dir, err)
	}
	cfg, err := Unmarshal(cb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	tok, err := tokenize.Load(dir)
	if err != nil {
		return nil, err
	}
	if tok.VocabSize() != cfg.Encoder.Vocab() {
		return nil, fmt.Errorf("%s: tokenizer has %d tokens, model vocab_size %d", dir, tok.VocabSize(), cfg.Encoder.Vocab())
	}
	store := model.NewStore()
	if err := c.Restore(store, be); err != nil {
		return nil, err
	}
	return &Embedder{Cfg: cfg, Tok: tok, Backend: be, Store: store, Batch: 64}, nil
}

var embedMu sync.Mutex

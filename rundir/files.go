package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/tokenize"
)

// TokenizerFiles are the tokenizer's files kept in a run and in each checkpoint, those
// tokenize.Tokenizer.Save writes: tokenizer.json and tokenizer_config.json always, vocab.txt
// for WordPiece, spm.model and added_tokens.json for a SentencePiece Unigram tokenizer loaded
// from spm.model (DeBERTa-v3).
var TokenizerFiles = []string{"tokenizer.json", "vocab.txt", "tokenizer_config.json", "spm.model", "added_tokens.json"}

// requiredTokenizerFiles are the TokenizerFiles every tokenizer writes.
var requiredTokenizerFiles = map[string]bool{"tokenizer.json": true, "tokenizer_config.json": true}

// WriteModelFiles stores a model configuration (as name) and the tokenizer at the top of a
// run directory and returns the files to keep in every checkpoint.
func WriteModelFiles(dir, name string, cfg []byte, tok *tokenize.Tokenizer) (map[string][]byte, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	if err := tok.Save(dir); err != nil {
		return nil, fmt.Errorf("run %s: tokenizer: %w", dir, err)
	}
	if err := WriteFile(filepath.Join(dir, name), cfg); err != nil {
		return nil, err
	}
	files := map[string][]byte{name: cfg}
	for _, f := range TokenizerFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if errors.Is(err, fs.ErrNotExist) && !requiredTokenizerFiles[f] {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", dir, err)
		}
		files[f] = b
	}
	return files, nil
}

// BestCheckpoint returns the directory of a run's best checkpoint (the newest one when no
// best was recorded).
func BestCheckpoint(dir string) (string, error) {
	steps, err := checkpoints.List(dir)
	if err != nil {
		return "", err
	}
	if len(steps) == 0 {
		return "", fmt.Errorf("run %s: no checkpoints", dir)
	}
	last := checkpoints.Dir(dir, steps[len(steps)-1])
	b, err := os.ReadFile(filepath.Join(last, "state.json"))
	if err != nil {
		return "", fmt.Errorf("run %s: %w", dir, err)
	}
	var m struct {
		Extra struct {
			Best struct {
				Step int `json:"step"`
			} `json:"best"`
		} `json:"extra"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(last, "state.json"), err)
	}
	if m.Extra.Best.Step > 0 {
		for _, s := range steps {
			if s == m.Extra.Best.Step {
				return checkpoints.Dir(dir, s), nil
			}
		}
	}
	return last, nil
}

// CheckpointDir resolves path, a run directory (its best checkpoint) or a checkpoint
// directory, to a checkpoint directory.
func CheckpointDir(path string) (string, error) {
	if _, err := os.Stat(filepath.Join(path, "state.json")); err == nil {
		return path, nil
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("run %s: %w", path, err)
	}
	return BestCheckpoint(path)
}

// LoadCheckpoint loads the checkpoint at path (a run directory's best, or a checkpoint
// directory), with the content of its model configuration file configFile and its tokenizer.
func LoadCheckpoint(path, configFile string) (*checkpoints.Checkpoint, []byte, *tokenize.Tokenizer, error) {
	dir, err := CheckpointDir(path)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := checkpoints.Load(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	cb, err := c.File(configFile)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s has no %s (not a checkpoint of this model kind): %w", dir, configFile, err)
	}
	tok, err := tokenize.Load(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: tokenizer: %w", dir, err)
	}
	return c, cb, tok, nil
}

// CheckNew refuses to start a new run in a directory that already holds one.
func CheckNew(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, MetaFile)); err == nil {
		return fmt.Errorf("run directory %s already holds a run: use -resume, or another -run", dir)
	}
	if steps, err := checkpoints.List(dir); err == nil && len(steps) > 0 {
		return fmt.Errorf("run directory %s already has checkpoints: use -resume, or another -run", dir)
	}
	return nil
}

package biencoder

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/safetensors"
	"github.com/toolret/toolret/tokenize"
)

// IsRun reports whether path is a bi-encoder run or checkpoint (its biencoder.json, in the
// directory or in its best checkpoint), as opposed to a HuggingFace directory. A pretrain
// run is one too: it writes its encoder as a bi-encoder.
func IsRun(path string) bool {
	if _, err := os.Stat(filepath.Join(path, ConfigFile)); err == nil {
		return true
	}
	if _, err := os.Stat(filepath.Join(path, "config.json")); err == nil {
		return false // a HuggingFace directory
	}
	c, err := rundir.CheckpointDir(path)
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(c, ConfigFile))
	return err == nil
}

// WarmStart loads the encoder weights of the bi-encoder run at run (its query tower) into
// store in HF layout, under each of bases (scope paths such as "/query"; none: the root), and
// returns its encoder config and tokenizer. A BERT
// encoder with fewer than maxLen absolute positions gets its position table extended to
// maxLen rows (see ExtendPositions, seeded by seed; reported on log); other encoders keep
// theirs.
func WarmStart(run string, bk compute.Backend, store *model.Store, maxLen int, seed uint64, log io.Writer, bases ...string) (encoder.Config, *tokenize.Tokenizer, error) {
	emb, err := LoadRun(run, bk)
	if err != nil {
		return nil, nil, err
	}
	bc := emb.Cfg.Encoder.WithPooler(false) // the bi-encoder pools itself; no pooler weights to carry over
	tmp, err := os.MkdirTemp("", "toolret-warm-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	if err := bc.SaveHF(encoder.In(emb.Store.RootScope(), emb.Cfg.TowerBase(QueryTower)), tmp, false); err != nil {
		return nil, nil, fmt.Errorf("warm start: %w", err)
	}
	if bc.ModelType() == "bert" && maxLen > bc.MaxPositions() {
		if err := ExtendPositions(tmp, maxLen, bc.InitRange(), seed); err != nil {
			return nil, nil, fmt.Errorf("warm start from %s: %w", run, err)
		}
		fmt.Fprintf(log, "warm start: position table extended from the retriever's %d rows to -max-len %d (rows %d.. initialised N(0, %g))\n",
			bc.MaxPositions(), maxLen, bc.MaxPositions(), bc.InitRange())
	}
	if len(bases) == 0 {
		bases = []string{""}
	}
	var loaded encoder.Config
	for _, b := range bases {
		if loaded, err = encoder.LoadHF(encoder.In(store.RootScope(), b), tmp); err != nil {
			return nil, nil, fmt.Errorf("warm start: %w", err)
		}
	}
	return loaded, emb.Tok, nil
}

// PositionTable is the tensor of BERT's absolute position embeddings in an HF directory
// written without the model prefix.
const PositionTable = "embeddings.position_embeddings.weight"

// ExtendPositions rewrites the BERT HF directory dir (config.json, model.safetensors in F32,
// tensor names without prefix) for n absolute positions: max_position_embeddings becomes n
// and the position table keeps its rows, followed by new rows drawn from N(0, std) (seeded),
// as a from-scratch BERT initialises them. Copying trained rows instead would give the new
// positions the embedding of another position (row 0 is [CLS]'s).
func ExtendPositions(dir string, n int, std float64, seed uint64) error {
	cfgPath := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("%s: %w", cfgPath, err)
	}
	old, ok := cfg["max_position_embeddings"].(float64)
	if !ok || int(old) < 1 {
		return fmt.Errorf("%s: max_position_embeddings %v: want a positive number", cfgPath, cfg["max_position_embeddings"])
	}
	if n <= int(old) {
		return fmt.Errorf("%s: extend %d positions to %d: not more", cfgPath, int(old), n)
	}
	wPath := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(wPath)
	if err != nil {
		return err
	}
	var ts []safetensors.Tensor
	found := false
	for _, name := range f.Names() {
		v, shape, err := f.Float32(name)
		if err != nil {
			return err
		}
		if name == PositionTable {
			if len(shape) != 2 || shape[0] != int(old) {
				return fmt.Errorf("%s: %s has shape %v, want [%d, hidden]", wPath, name, shape, int(old))
			}
			r := rand.New(rand.NewPCG(seed, 0x706f73))
			ext := make([]float32, n*shape[1])
			copy(ext, v)
			for i := len(v); i < len(ext); i++ {
				ext[i] = float32(r.NormFloat64() * std)
			}
			v, shape, found = ext, []int{n, shape[1]}, true
		}
		ts = append(ts, safetensors.Tensor{Name: name, Shape: shape, Data: v})
	}
	if !found {
		return fmt.Errorf("%s: no tensor %s", wPath, PositionTable)
	}
	cfg["max_position_embeddings"] = n
	if b, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		return err
	}
	if err := safetensors.Write(wPath, ts, f.Metadata); err != nil {
		return err
	}
	return rundir.WriteFile(cfgPath, b)
}

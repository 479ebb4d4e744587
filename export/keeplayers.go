package export

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/toolret/toolret/safetensors"
)

// layerName matches the transformer layer of an encoder tensor in HF naming
// ("encoder.layer.3.attention…", with or without a "bert.", "mpnet." or "deberta." prefix).
var layerName = regexp.MustCompile(`(^|\.)encoder\.layer\.(\d+)\.`)

// ParseLayers parses a comma-separated list of layer indices ("0,2,4"), strictly increasing.
func ParseLayers(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("layer %q: want a layer index >= 0", f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("layers %q: indices must be strictly increasing", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// KeepLayersHF writes to out a copy of the HuggingFace / sentence-transformers model
// directory src with only the transformer layers keep (indices into src's layers, strictly
// increasing), renumbered 0, 1, …: layer pruning, as distillation recipes make a smaller
// student from its teacher (every other layer) or as a smaller encoder is made to measure
// what depth buys. Embeddings, pooler and every other tensor are kept; config.json gets the
// new num_hidden_layers; tokenizer and pooling files are src's. An index outside src's
// layers, a layer without tensors or a src without num_hidden_layers is an error naming it.
// out is written in a temporary directory beside it and renamed into place; an existing out
// is refused.
func KeepLayersHF(out, src string, keep []int) error {
	if len(keep) == 0 {
		return fmt.Errorf("keep layers: no layer given")
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("keep layers: %s exists", out)
	}
	cfgPath := filepath.Join(src, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		return fmt.Errorf("keep layers: %w", err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("keep layers: %s: %w", cfgPath, err)
	}
	nf, ok := cfg["num_hidden_layers"].(float64)
	if !ok || nf < 1 || nf != float64(int(nf)) {
		return fmt.Errorf("keep layers: %s: no num_hidden_layers", cfgPath)
	}
	n := int(nf)
	renum := map[int]int{}
	for i, l := range keep {
		if l < 0 || l >= n {
			return fmt.Errorf("keep layers: layer %d: %s has layers 0-%d", l, src, n-1)
		}
		if i > 0 && l <= keep[i-1] {
			return fmt.Errorf("keep layers: %v: indices must be strictly increasing", keep)
		}
		renum[l] = i
	}
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		return fmt.Errorf("keep layers: %w", err)
	}
	var ts []safetensors.Raw
	seen := map[int]bool{}
	for _, orig := range f.Names() {
		name := orig
		if m := layerName.FindStringSubmatchIndex(orig); m != nil {
			l, _ := strconv.Atoi(orig[m[4]:m[5]])
			if l >= n {
				return fmt.Errorf("keep layers: tensor %s: layer %d, but %s says num_hidden_layers %d", orig, l, cfgPath, n)
			}
			j, kept := renum[l]
			if !kept {
				continue
			}
			seen[l] = true
			name = orig[:m[4]] + strconv.Itoa(j) + orig[m[5]:]
		}
		b, info, err := f.Raw(orig)
		if err != nil {
			return fmt.Errorf("keep layers: %w", err)
		}
		ts = append(ts, safetensors.Raw{Name: name, DType: info.DType, Shape: info.Shape, Data: b})
	}
	for _, l := range keep {
		if !seen[l] {
			return fmt.Errorf("keep layers: %s has no tensor of layer %d (encoder.layer.%d.*)", src, l, l)
		}
	}
	cfg["num_hidden_layers"] = len(keep)
	newCfg, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("keep layers: %w", err)
	}
	meta := map[string]string{"format": "pt", "toolret_keep_layers": fmt.Sprintf("%s of %s", FormatLayers(keep), src)}
	err = writeModelDir(out, src, func(tmp string) error {
		if err := os.WriteFile(filepath.Join(tmp, "config.json"), append(newCfg, '\n'), 0o644); err != nil {
			return err
		}
		return safetensors.WriteRaw(filepath.Join(tmp, "model.safetensors"), ts, meta)
	})
	if err != nil {
		return fmt.Errorf("keep layers: %w", err)
	}
	return nil
}

// FormatLayers writes layer indices as ParseLayers reads them ("0,2,4").
func FormatLayers(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

package encoder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// IsHFDir reports whether dir is a HuggingFace model directory (config.json at its top)
// rather than a toolret run or checkpoint (state.json).
func IsHFDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err == nil {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, "config.json"))
	return err == nil
}

// STPooling reads the pooling of a sentence-transformers directory (modules.json and its
// Pooling module's config.json): ok is false when dir has no modules.json or no Pooling module.
func STPooling(dir string) (p Pooling, ok bool, err error) {
	var mods []struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	found, err := readJSON(filepath.Join(dir, "modules.json"), &mods)
	if err != nil || !found {
		return "", false, err
	}
	for _, mod := range mods {
		if k, _ := STModuleOf(mod.Type); k != STModPooling {
			continue
		}
		if !filepath.IsLocal(mod.Path) {
			return "", false, fmt.Errorf("%s: module path %q leaves the model directory", filepath.Join(dir, "modules.json"), mod.Path)
		}
		var c map[string]any
		cp := filepath.Join(dir, mod.Path, "config.json")
		if _, err := readJSON(cp, &c); err != nil {
			return "", false, err
		}
		if p, ok := STPoolingMode(c); ok {
			return p, true, nil
		}
		return "", false, fmt.Errorf("%s: pooling mode not supported (cls or mean tokens)", cp)
	}
	return "", false, nil
}

// The sentence-transformers prompt names of a query and of a document (a tool text).
const (
	STQueryPrompt    = "query"
	STDocumentPrompt = "document"
)

// STPrompts reads the "query" and "document" prompts of a sentence-transformers directory's
// config_sentence_transformers.json, as its encode_query and encode_document apply them ("" for
// each one it lacks, or without the file). An iteration-aware export's prompts (it has
// "iteration_0": markers its retriever applies per iteration) are not prompts: both "".
func STPrompts(dir string) (query, document string, err error) {
	var st struct {
		Prompts map[string]string `json:"prompts"`
	}
	if _, err := readJSON(filepath.Join(dir, "config_sentence_transformers.json"), &st); err != nil {
		return "", "", err
	}
	if _, marker := st.Prompts["iteration_0"]; marker {
		return "", "", nil
	}
	return st.Prompts[STQueryPrompt], st.Prompts[STDocumentPrompt], nil
}

// readJSON decodes the JSON file p into v; found is false when p does not exist.
func readJSON(p string, v any) (found bool, err error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s: %w", p, err)
	}
	return true, nil
}

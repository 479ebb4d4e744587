package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolret/toolret/internal/atomicfile"
	"github.com/toolret/toolret/internal/jsonfile"
	"github.com/toolret/toolret/rerank"
)

// RecipeFile is the name of a model directory's retrieval recipe (Recipe), beside its
// config.json.
const RecipeFile = "toolret_recipe.json"

// RecipeVersion is the version of the recipe format this build reads and writes.
const RecipeVersion = 1

// Recipe is how a model directory is meant to be used for retrieval beyond its weights,
// written as toolret_recipe.json at its top (an hf export, export.Options.Recipe). A model's
// prompts and per-side lengths are not repeated here: they live in the sentence-transformers
// files (config_sentence_transformers.json's "prompts" and its "toolret" lengths,
// sentence_bert_config.json's max_seq_length), which LoadHF reads.
//
// toolret.Evaluate, toolret.Serve (with Library and Pretrained), export -format index and
// the commands built on them apply a model's recipe unless told not to (NoRecipe, -no-recipe):
// an index exported from the model records the hybrid (Manifest.Hybrid), which toolindex.Load
// applies.
type Recipe struct {
	// Version is RecipeVersion; a file of another version is refused.
	Version int `json:"version"`
	// Hybrid fuses the model's dense ranking with BM25 over the library's tool texts
	// (toolindex.WithHybrid); nil: the dense ranking alone.
	Hybrid *HybridRecipe `json:"hybrid,omitempty"`
	// Clauses, when set, ranks each query whole and clause by clause and merges the rankings
	// (rerank.Clauses, eval -clauses), after the hybrid fusion: a query that states several
	// needs gets each need's tools. nil: the whole query only.
	Clauses *ClausesRecipe `json:"clauses,omitempty"`
	// Reranker is a cross-encoder reranking the first stage's top tools. Not supported yet:
	// a recipe naming one is refused (Validate), so that a model directory never claims a
	// second stage that is not applied.
	Reranker *RerankerRecipe `json:"reranker,omitempty"`
	// SelectedOn says, in free text, on which dev split the recipe's weights were chosen.
	SelectedOn string `json:"selected_on,omitempty"`
}

// HybridRecipe is a recipe's fusion of the dense ranking with BM25, as toolindex.WithHybrid
// serves it.
type HybridRecipe struct {
	// Fusion is "rrf", "minmax" or "zscore".
	Fusion string `json:"fusion"`
	// Weight is the dense side's weight w in [0, 1] of minmax and zscore,
	// w·dense + (1−w)·bm25; 0 for rrf, which has none.
	Weight float64 `json:"weight"`
}

// String describes the fusion as suite rows and logs show it: "+bm25 zscore 0.3", "+bm25 rrf".
func (h *HybridRecipe) String() string {
	if h == nil {
		return ""
	}
	if h.Fusion == "rrf" {
		return "+bm25 rrf"
	}
	return fmt.Sprintf("+bm25 %s %g", h.Fusion, h.Weight)
}

// check validates the fusion; errors name the field.
func (h *HybridRecipe) check() error {
	switch h.Fusion {
	case "rrf":
		if h.Weight != 0 {
			return fmt.Errorf("hybrid.weight %g: rrf has no weight (give 0 or leave it out)", h.Weight)
		}
	case "minmax", "zscore":
		if !(h.Weight >= 0 && h.Weight <= 1) {
			return fmt.Errorf("hybrid.weight %g: want the dense weight in [0, 1]", h.Weight)
		}
	default:
		return fmt.Errorf("hybrid.fusion %q: want rrf, minmax or zscore", h.Fusion)
	}
	return nil
}

// ClausesRecipe is a recipe's per-clause retrieval (rerank.ClauseOptions); a zero field is
// rerank's default.
type ClausesRecipe struct {
	// Merge is max, mix or rrf (rerank.Merge).
	Merge string `json:"merge,omitempty"`
	// Norm is zscore, minmax or off (rerank.Norm).
	Norm string `json:"norm,omitempty"`
	// MinWords: a shorter clause is merged into its neighbour.
	MinWords int `json:"min_words,omitempty"`
	// Whole is the whole query's weight of mix and rrf.
	Whole float64 `json:"whole,omitempty"`
	// Depth is how many tools of each ranking are merged.
	Depth int `json:"depth,omitempty"`
}

// Options returns c as rerank's options.
func (c *ClausesRecipe) Options() rerank.ClauseOptions {
	return rerank.ClauseOptions{Merge: rerank.Merge(c.Merge), Norm: rerank.Norm(c.Norm), MinWords: c.MinWords, Whole: c.Whole, Depth: c.Depth}
}

// ClausesOf returns the recipe of options o.
func ClausesOf(o rerank.ClauseOptions) *ClausesRecipe {
	return &ClausesRecipe{Merge: string(o.Merge), Norm: string(o.Norm), MinWords: o.MinWords, Whole: o.Whole, Depth: o.Depth}
}

// String describes the clauses as rerank.ClauseOptions does ("clauses max zscore").
func (c *ClausesRecipe) String() string {
	if c == nil {
		return ""
	}
	return c.Options().String()
}

// RerankerRecipe names a cross-encoder inside the model directory (not supported yet; see
// Recipe.Reranker).
type RerankerRecipe struct {
	// Path is the cross-encoder's directory, relative to the model directory.
	Path string `json:"path"`
	// Depth is the number of first-stage tools it rescores.
	Depth int `json:"depth,omitempty"`
	// Weight interpolates its scores with the first stage's (toolindex.WithInterpolation).
	Weight *float64 `json:"weight,omitempty"`
}

// Validate checks the recipe; errors name the field.
func (r *Recipe) Validate() error {
	if r.Version != RecipeVersion {
		return fmt.Errorf("version %d: this toolret reads recipe version %d", r.Version, RecipeVersion)
	}
	if r.Hybrid != nil {
		if err := r.Hybrid.check(); err != nil {
			return err
		}
	}
	if r.Clauses != nil {
		if err := r.Clauses.Options().Check(); err != nil {
			return err // "clauses: merge ...": rerank names the field
		}
	}
	if r.Reranker != nil {
		return fmt.Errorf("reranker %q: a reranker in the recipe is not supported yet (serve -reranker and eval -method rerank-m apply one)", r.Reranker.Path)
	}
	return nil
}

// Empty reports whether the recipe changes nothing (no hybrid, no clauses, no reranker).
func (r *Recipe) Empty() bool {
	return r == nil || (r.Hybrid == nil && r.Clauses == nil && r.Reranker == nil)
}

// ReadRecipe reads and validates dir's toolret_recipe.json: nil, nil when dir has none.
// Errors name the file, and the line and column of a JSON error.
func ReadRecipe(dir string) (*Recipe, error) {
	p := filepath.Join(dir, RecipeFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recipe %s: %w", p, err)
	}
	r, err := ParseRecipe(b)
	if err != nil {
		return nil, fmt.Errorf("recipe %s: %w", p, err)
	}
	return r, nil
}

// ParseRecipe decodes and validates a recipe file's content; unknown fields are errors, and
// JSON errors give their line and column.
func ParseRecipe(b []byte) (*Recipe, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Recipe
	if err := dec.Decode(&r); err != nil {
		return nil, jsonPosition(b, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("content after the JSON object")
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// jsonPosition prefixes a decoding error with its line and column in b.
func jsonPosition(b []byte, dec *json.Decoder, err error) error {
	off := jsonfile.Offset(err)
	switch {
	case off >= 0:
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		if len(bytes.TrimSpace(b)) == 0 {
			return errors.New("empty file: want a JSON object")
		}
		off = int64(len(b))
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		off = dec.InputOffset()
	}
	if off < 0 {
		return err
	}
	line, col := jsonfile.LineColumn(b, off)
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// WriteRecipe validates r and writes it as dir's toolret_recipe.json, atomically (the old
// file, or none, stays when it fails).
func WriteRecipe(dir string, r *Recipe) error {
	b, err := marshalRecipe(r)
	if err != nil {
		return fmt.Errorf("recipe %s: %w", filepath.Join(dir, RecipeFile), err)
	}
	return atomicfile.Write(filepath.Join(dir, RecipeFile), b)
}

// marshalRecipe validates and encodes r (the version set when 0).
func marshalRecipe(r *Recipe) ([]byte, error) {
	c := *r
	if c.Version == 0 {
		c.Version = RecipeVersion
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

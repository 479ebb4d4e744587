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
	"slices"
	"strings"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/fusion"
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
// the commands built on them apply a model's recipe unless told not to (NoRecipe, -no-recipe),
// in this order: the hybrid fusion, the clauses, the reranker. An index exported from the
// model records them (Manifest.Hybrid, Clauses and Reranker, the cross-encoder copied into it),
// and toolindex.Load applies them.
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
	// Reranker, when set, reranks the top tools of the ranking the hybrid fusion and the
	// clauses give with a cross-encoder inside the model directory, interpolating its scores
	// with that ranking's (toolindex.WithReranker, WithInterpolation). nil: none.
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
	// Adaptive, when set (minmax and zscore), replaces Weight by a per-query dense weight,
	// clamp(base + slope·z1, 0, 1), z1 the top z-score of the query's dense ranking
	// (fusion.Adaptive; eval -method fusion -weight adaptive learns one on a dev split).
	Adaptive *fusion.Adaptive `json:"adaptive,omitempty"`
}

// String describes the fusion as suite rows and logs show it: "+bm25 zscore 0.3", "+bm25 rrf".
func (h *HybridRecipe) String() string {
	if h == nil {
		return ""
	}
	if h.Fusion == "rrf" {
		return "+bm25 rrf"
	}
	if h.Adaptive != nil {
		return fmt.Sprintf("+bm25 %s adaptive %s", h.Fusion, h.Adaptive.Describe())
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
	if h.Adaptive != nil {
		if h.Fusion == "rrf" {
			return errors.New("hybrid.adaptive: rrf has no weight to adapt")
		}
		if err := h.Adaptive.Check(); err != nil {
			return fmt.Errorf("hybrid.adaptive: %w", err)
		}
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

// RerankerDir is where an export puts a recipe's cross-encoder: OUT/reranker in an hf export
// (RerankerRecipe.Path) and in an index (Manifest.Reranker).
const RerankerDir = "reranker"

// RerankerRecipe is a recipe's second stage: a cross-encoder (an hf export of a cross-encoder
// run, as export -model CE_RUN -format hf writes it) inside the model directory, reranking
// the top Depth tools of the first stage's ranking (after the hybrid fusion and the clauses).
type RerankerRecipe struct {
	// Path is the cross-encoder's directory, relative to the model directory (slash-separated,
	// clean, inside it: RerankerDir as exports write it).
	Path string `json:"path"`
	// Depth (> 0) is the number of the first stage's top tools it rescores; the others follow
	// in the first stage's order.
	Depth int `json:"depth"`
	// Weight is the cross-encoder's weight w in [0, 1] of the interpolation
	// w·minmax(cross-encoder) + (1−w)·minmax(first stage) over the top Depth, as
	// toolindex.WithInterpolation, serve -rerank-weight and eval -method rerank-m
	// -interpolate minmax compute it (0: the first stage's order). nil: the cross-encoder's
	// order alone.
	Weight *float64 `json:"weight,omitempty"`
	// Dir is the cross-encoder's directory on disk, not written to the file: Path inside the
	// directory ReadRecipe read the recipe from, or, in a recipe given to an export
	// (Options.Recipe), the cross-encoder directory it copies to Path.
	Dir string `json:"-"`
}

// String describes the reranker as suite rows and logs show it: "+rerank 20 w0.4", or
// "+rerank 20" for the cross-encoder's order alone.
func (r *RerankerRecipe) String() string {
	if r == nil {
		return ""
	}
	if r.Weight == nil {
		return fmt.Sprintf("+rerank %d", r.Depth)
	}
	return fmt.Sprintf("+rerank %d w%g", r.Depth, *r.Weight)
}

// check validates the reranker's fields; errors name the field.
func (r *RerankerRecipe) check() error {
	p := r.Path
	if p == "" || p == "." || filepath.ToSlash(filepath.Clean(filepath.FromSlash(p))) != p || !filepath.IsLocal(filepath.FromSlash(p)) || strings.Contains(p, `\`) {
		return fmt.Errorf("reranker.path %q: want a directory inside the model directory: relative, clean, slash-separated, no \"..\"", p)
	}
	if r.Depth <= 0 {
		return fmt.Errorf("reranker.depth %d: want the number of top tools it rescores, > 0", r.Depth)
	}
	if w := r.Weight; w != nil && !(*w >= 0 && *w <= 1) {
		return fmt.Errorf("reranker.weight %g: want the cross-encoder weight in [0, 1] (leave it out for the cross-encoder's order alone)", *w)
	}
	return nil
}

// CheckCrossEncoder returns an error unless dir is a cross-encoder in HuggingFace layout,
// reading only its config.json: XxxForSequenceClassification with one label (LoadCrossEncoder
// reads the weights).
func CheckCrossEncoder(dir string) error {
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(dir); serr != nil {
			return fmt.Errorf("%s: no such directory", dir)
		}
		return fmt.Errorf("%s is not a cross-encoder: no config.json (export a cross-encoder run with export -format hf)", dir)
	}
	if err != nil {
		return err
	}
	var c struct {
		Architectures []string          `json:"architectures"`
		ID2Label      map[string]string `json:"id2label"`
		NumLabels     *int              `json:"num_labels"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	seq := slices.ContainsFunc(c.Architectures, func(a string) bool { return strings.HasSuffix(a, "ForSequenceClassification") })
	labels := len(c.ID2Label)
	if c.NumLabels != nil && labels == 0 {
		labels = *c.NumLabels
	}
	if !seq || labels != 1 {
		return fmt.Errorf("%s is not a cross-encoder: %s has architectures %q and %d labels, want XxxForSequenceClassification with one label", dir, p, c.Architectures, labels)
	}
	return nil
}

// LoadCrossEncoder loads the cross-encoder in the HuggingFace directory dir (LoadHF),
// refusing any other model.
func LoadCrossEncoder(dir string, be compute.Backend) (*Model, error) {
	m, err := LoadHF(dir, be)
	if err != nil {
		return nil, err
	}
	if m.Head == nil || len(m.Head.Labels) != 1 || m.Kind != KindCrossEncoder {
		return nil, fmt.Errorf("%s is not a cross-encoder (XxxForSequenceClassification with one label), it is a %s", dir, m.Kind)
	}
	return m, nil
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
		if err := r.Reranker.check(); err != nil {
			return err
		}
	}
	return nil
}

// Empty reports whether the recipe changes nothing (no hybrid, no clauses, no reranker).
func (r *Recipe) Empty() bool {
	return r == nil || (r.Hybrid == nil && r.Clauses == nil && r.Reranker == nil)
}

// ReadRecipe reads and validates dir's toolret_recipe.json: nil, nil when dir has none. A
// reranker's directory must be a cross-encoder (CheckCrossEncoder); its Dir is set to it.
// Errors name the file and the field, and the line and column of a JSON error.
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
	if rr := r.Reranker; rr != nil {
		rr.Dir = filepath.Join(dir, filepath.FromSlash(rr.Path))
		if err := CheckCrossEncoder(rr.Dir); err != nil {
			return nil, fmt.Errorf("recipe %s: reranker.path %q: %w", p, rr.Path, err)
		}
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

// RerankerSettings are the settings that add a cross-encoder reranker to a recipe (export
// -recipe-reranker, -recipe-rerank-depth, -recipe-rerank-weight: flagcfg declares the flags
// from these fields); DefaultRerankerSettings holds the defaults.
type RerankerSettings struct {
	CrossEncoder string  `json:"recipe-reranker" help:"-format hf or index: the model's recipe reranks the top -recipe-rerank-depth tools (after its fusion and clauses) with this cross-encoder, copied into the export (reranker/): an hf cross-encoder directory (export -format hf of a train crossencoder run), a hub id, or a cross-encoder run; replaces the reranker of the model's own recipe"`
	Depth        int     `json:"recipe-rerank-depth" help:"with -recipe-reranker: how many of the first stage's top tools the cross-encoder rescores"`
	Weight       float64 `json:"recipe-rerank-weight" help:"with -recipe-reranker: the cross-encoder's weight w in [0, 1] of w·minmax(cross-encoder) + (1-w)·minmax(first stage) over the top -recipe-rerank-depth (eval -model DIR -reranker CE -weight dev prints it); -1: the cross-encoder's order alone"`
}

// DefaultRerankerSettings returns no reranker, depth 20, and the cross-encoder's order alone
// (weight -1).
func DefaultRerankerSettings() RerankerSettings { return RerankerSettings{Depth: 20, Weight: -1} }

// Reranker returns the recipe's reranker the settings describe (its Dir the cross-encoder to
// copy in), nil without a CrossEncoder. A depth or weight changed from the defaults without
// one, a depth <= 0 or a weight outside [0, 1] (other than -1) is an error naming the flag.
func (s RerankerSettings) Reranker() (*RerankerRecipe, error) {
	if s.CrossEncoder == "" {
		if d := DefaultRerankerSettings(); s.Depth != d.Depth || s.Weight != d.Weight {
			return nil, errors.New("-recipe-rerank-depth and -recipe-rerank-weight need -recipe-reranker")
		}
		return nil, nil
	}
	r := &RerankerRecipe{Path: RerankerDir, Depth: s.Depth, Dir: s.CrossEncoder}
	if s.Weight != -1 {
		w := s.Weight
		r.Weight = &w
	}
	if err := (&Recipe{Version: RecipeVersion, Reranker: r}).Validate(); err != nil {
		return nil, fmt.Errorf("-recipe-%s", strings.Replace(err.Error(), "reranker.", "rerank-", 1))
	}
	return r, nil
}

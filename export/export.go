// Package export turns trained toolret runs into artefacts other programs load:
//
//	hf     a HuggingFace directory (config.json, model.safetensors, tokenizer.json,
//	       vocab.txt, tokenizer_config.json with the tower's model_max_length,
//	       special_tokens_map.json) with the ONNX model where transformers.js, optimum and
//	       hugot look for it, onnx/model.onnx (see ONNX; encoders without an ONNX graph get a
//	       Manifest note instead); bi-encoders also get the sentence-transformers files
//	       (modules.json, 1_Pooling/, sentence_bert_config.json, a Normalize module for cosine
//	       models), heads become XxxForSequenceClassification. Separate-tower bi-encoders are
//	       written as two such directories, query/ and tool/.
//	onnx   the same ONNX model alone (opset 17, dynamic batch and sequence axes) per tower,
//	       with the tokenizer files: inputs input_ids, attention_mask, token_type_ids (int64
//	       [batch_size, sequence_length]); outputs last_hidden_state and sentence_embedding
//	       (pooled, L2-normalised for cosine models) or, with a head, logits [batch_size,
//	       labels].
//	index  the tool embeddings of a bi-encoder over a dataset's tool corpus
//	       (tools.safetensors, tools.jsonl) plus the query tower in hf layout (query/), all a
//	       server needs to answer queries (see package retriever); given the run's training
//	       queries (Options.Train), also the tools' Tool2Vec usage vectors (tools_usage.safetensors).
//	       An MLC classifier (classifier -kind mlc) is indexed the same way: its head's rows are
//	       the tool vectors, its encoder ([CLS] or its pooler) the query tower, and its per-tool
//	       bias a "bias" tensor beside them (MLCManifest).
//	       With Options.Refiner, a ToolRefiner over the run's candidates is packaged in
//	       refiner/ (RefinerManifest), and package retriever serves both stages.
//
// A bi-encoder's retrieval recipe (Recipe, toolret_recipe.json) goes with it: an hf export
// writes it, an index records its hybrid, clauses and reranker (Manifest.Hybrid, Clauses,
// Reranker), and both copy the reranker's cross-encoder into reranker/.
//
// Every export writes manifest.json (toolret version, source, model kind, data fingerprint,
// sha256 of every file). Exports are built in a temporary directory beside the output and
// renamed into place, so a failed export leaves nothing behind.
//
// Model kinds plug in through their registration (package kinds): a kind's Export facet
// (Facet) names its formats, its role as an index's first stage and a loader returning a
// Model (encoder towers plus an optional classification head).
package export

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/internal/atomicfile"
	"github.com/toolret/toolret/internal/jsonfile"
	"github.com/toolret/toolret/kinds"
	"github.com/toolret/toolret/rundir"
)

// Formats.
const (
	FormatHF    = "hf"
	FormatONNX  = "onnx"
	FormatIndex = "index"
)

// ManifestFile is the name of the export manifest.
const ManifestFile = "manifest.json"

// Options configure an export.
type Options struct {
	Format string // hf, onnx or index
	Out    string // output directory
	// Force replaces an existing non-empty output directory.
	Force bool
	// Data is the dataset whose tools an index export embeds (nil: the embedded default).
	Data *data.Dataset
	// DataSource names Data in the manifest (a directory, or "default").
	DataSource string
	// Train, for an index, is the training part of the run (its judged queries and qrels, over
	// Data): the index then also stores Tool2Vec usage vectors (IndexUsage, Manifest.Usage).
	// nil: text vectors only. Usage vectors are a bi-encoder's: an MLC index ignores Train.
	Train *data.Split
	// Source overrides the source recorded in the manifest (default: Model.Source).
	Source string
	// Refiner, for an index, is a refiner run (or checkpoint) to package with it
	// (IndexRefinerDir, Manifest.Refiner): a ToolRefiner over this run's candidates, trained
	// on Data.
	Refiner string
	// Quantize, when int8 (QuantInt8, QuantInt8Tensor), adds the quantized ONNX model
	// (QuantizeONNX) beside each fp32 one: onnx/model_int8.onnx in an hf export (where
	// transformers.js looks for dtype "int8"), model_int8.onnx (query_int8.onnx,
	// tool_int8.onnx) in an onnx one. An index embeds its tools with the int8 model (on the onnx
	// backend: Model.Quantize) and records it (Manifest.Quantization), so that it is served
	// with the same weights. QuantDefault: the model's own (Model.Quantization).
	Quantize Quantization
	// Precision, for an index, is the precision its tools are embedded at (Model.SetPrecision)
	// and which it records (Manifest.Precision), so that its queries are embedded alike:
	// backend.FP32 (or ""), backend.BF16, or backend.AutoPrecision (bf16 where the backend
	// multiplies bfloat16 natively, backend.NativeBF16). bf16 is refused with int8 Quantize
	// and on the onnx backend; hf and onnx exports write float32 weights and take fp32 only.
	Precision string
	// Recipe replaces the model's retrieval recipe (Model.Recipe, read from its directory's
	// toolret_recipe.json) in the export: an hf export writes it as its RecipeFile, an index
	// records its hybrid, clauses and reranker (Manifest.Hybrid, Clauses, Reranker). A
	// reranker's cross-encoder (RerankerRecipe.Dir, an hf cross-encoder directory) is copied
	// into the export at its Path (an index: RerankerDir), with the rest of the export. nil:
	// the model's own; NoRecipe drops it.
	Recipe   *Recipe
	NoRecipe bool
	// LoRA is how a bi-encoder trained with LoRA is written: LoRAMerged (""; the adapters
	// merged into the base weights, the layout of a full fine-tune) or LoRAAdapter (a PEFT
	// adapter directory with its base model, -format hf only).
	LoRA string
}

// Manifest describes an export; it is written as manifest.json.
type Manifest struct {
	Toolret string `json:"toolret"`
	Format  string `json:"format"`
	Kind    string `json:"kind"`
	Source  string `json:"source,omitempty"`
	// DataFingerprint is the fingerprint (data.Dataset.Fingerprint) of the data the model
	// was trained on (from its checkpoint), or for an index, of the dataset indexed.
	DataFingerprint      string `json:"data_fingerprint,omitempty"`
	TrainDataFingerprint string `json:"train_data_fingerprint,omitempty"`
	DataSource           string `json:"data_source,omitempty"`
	// Towers maps tower names ("model" for a single tower, else query/tool) to their path
	// inside the export ("." for the top directory).
	Towers     map[string]string `json:"towers"`
	Similarity string            `json:"similarity,omitempty"`
	// Marker is the iteration marker of a bi-encoder trained on iterative feedback (train
	// biencoder -feedback; a format with one %d): its queries are embedded as iteration t's
	// instructions, Mark(Marker, t, query); "" for none.
	Marker string `json:"marker,omitempty"`
	// QueryPrompt and ToolPrompt are the prefixes a bi-encoder puts before queries and tool
	// texts (Model.QueryPrompt; also the "query" and "document" prompts of its towers'
	// config_sentence_transformers.json, which loading reads).
	QueryPrompt string   `json:"query_prompt,omitempty"`
	ToolPrompt  string   `json:"tool_prompt,omitempty"`
	Labels      []string `json:"labels,omitempty"`
	// Index: number of tools and embedding dimension.
	Tools int `json:"tools,omitempty"`
	Dim   int `json:"dim,omitempty"`
	// FirstStage is an index's first stage: FirstStageBiEncoder or FirstStageMLC ("" in
	// indexes written before it was recorded: a bi-encoder; see Stage).
	FirstStage string `json:"first_stage,omitempty"`
	// MLC describes an index from an MLC classifier; nil for a bi-encoder's.
	MLC *MLCManifest `json:"mlc,omitempty"`
	// Usage describes an index's Tool2Vec usage vectors (IndexUsage); nil when it has none.
	Usage *UsageManifest `json:"usage,omitempty"`
	// Refiner describes the ToolRefiner packaged with an index (IndexRefinerDir); nil when
	// it has none.
	Refiner *RefinerManifest `json:"refiner,omitempty"`
	// Quantization is the int8 quantization of the export's extra ONNX files and, for an
	// index, of the weights its tools were embedded with (Options.Quantize); "" for fp32.
	Quantization Quantization `json:"quantization,omitempty"`
	// Precision, in an index, is the precision its tool vectors were embedded at
	// (Options.Precision): backend.BF16, or "" for fp32 (indexes written before it was
	// recorded are fp32). toolindex.Load embeds queries at it unless told otherwise.
	Precision string `json:"precision,omitempty"`
	// Hybrid, in an index, is the BM25 fusion of the recipe of the model it was exported
	// from (Recipe.Hybrid): toolindex.Load serves it unless told otherwise.
	Hybrid *HybridRecipe `json:"hybrid,omitempty"`
	// Clauses, in an index, is the per-clause retrieval of the recipe of the model it was
	// exported from (Recipe.Clauses): toolindex.Load applies it unless told otherwise.
	Clauses *ClausesRecipe `json:"clauses,omitempty"`
	// Reranker, in an index, is the reranker of the recipe of the model it was exported from
	// (Recipe.Reranker), its cross-encoder copied into the index at Path (RerankerDir):
	// toolindex.Load applies it after the hybrid fusion and the clauses unless told otherwise.
	Reranker *RerankerRecipe `json:"reranker,omitempty"`
	// Notes are one-line remarks on what the export could not include (an encoder without
	// an ONNX graph); cmd/export prints them.
	Notes []string `json:"notes,omitempty"`
	// Files maps every file written (slash-separated path relative to the export) to its
	// sha256.
	Files map[string]string `json:"files"`
}

// Version is toolret's version string: the module version and VCS revision when the binary
// records them.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "toolret (unknown)"
	}
	v := "toolret " + bi.Main.Version
	if bi.Main.Path != "" && bi.Main.Path != "github.com/toolret/toolret" {
		for _, d := range bi.Deps {
			if d.Path == "github.com/toolret/toolret" {
				v = "toolret " + d.Version
			}
		}
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v += " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				v += "+dirty"
			}
		}
	}
	return v
}

// Export writes m in opts.Format into opts.Out and returns the manifest written. Nothing is
// written unless the model validates and the output directory is usable; the export is
// assembled in a temporary directory beside opts.Out and renamed into place.
func Export(m *Model, opts Options) (*Manifest, error) {
	switch opts.Format {
	case FormatHF, FormatONNX, FormatIndex:
	default:
		return nil, fmt.Errorf("export: unknown format %q (hf, onnx, index)", opts.Format)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if err := checkLoRA(m, opts.LoRA, opts.Format); err != nil {
		return nil, err
	}
	if opts.Refiner != "" && opts.Format != FormatIndex {
		return nil, fmt.Errorf("export: a refiner is packaged with an index (-format index), not -format %s", opts.Format)
	}
	recipe := m.Recipe
	if opts.Recipe != nil {
		recipe = opts.Recipe
	}
	if opts.NoRecipe {
		recipe = nil
	}
	if recipe != nil {
		if _, err := marshalRecipe(recipe); err != nil {
			return nil, fmt.Errorf("export: recipe: %w", err)
		}
		if m.Kind != KindBiEncoder && !recipe.Empty() {
			return nil, fmt.Errorf("export: recipe: %s is a %s; a retrieval recipe is a bi-encoder's", m.Source, m.Kind)
		}
		if recipe.Hybrid != nil && opts.Refiner != "" {
			return nil, fmt.Errorf("export: recipe hybrid %s and a refiner: the refiner was trained over the dense first stage's candidates; give one", recipe.Hybrid)
		}
		if rr := recipe.Reranker; rr != nil {
			if opts.Refiner != "" {
				return nil, fmt.Errorf("export: recipe reranker %s and a refiner are two second stages; give one", rr.Path)
			}
			if rr.Dir == "" {
				return nil, fmt.Errorf("export: recipe reranker %s: no cross-encoder directory to copy (RerankerRecipe.Dir)", rr.Path)
			}
			if err := CheckCrossEncoder(rr.Dir); err != nil {
				return nil, fmt.Errorf("export: recipe reranker: %w", err)
			}
		}
	}
	// The kind's registered export facet gates the format (a model of no registered kind,
	// built in memory, writes hf and onnx).
	k, kerr := kinds.Lookup(m.Kind)
	if kerr == nil && opts.Format != FormatIndex && !k.Exports(opts.Format) {
		return nil, fmt.Errorf("export: %s is a %s, which does not export as %s", m.Source, m.Kind, opts.Format)
	}
	if opts.Format == FormatIndex && (!k.Exports(FormatIndex) || k.Export.FirstStage == "") {
		return nil, fmt.Errorf("export: -format index needs a bi-encoder or an mlc classifier, %s is a %s", m.Source, m.Kind)
	}
	q := opts.Quantize
	if q == QuantDefault {
		q = m.Quantization()
	}
	if _, err := ParseQuantization(string(q)); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if !q.Int8() {
		q = QuantDefault
	}
	prec := ""
	if opts.Precision == backend.BF16 && opts.Format != FormatIndex {
		return nil, fmt.Errorf("export: precision %s is an index's (-format index): -format %s writes float32 weights", opts.Precision, opts.Format)
	}
	if opts.Precision != "" && opts.Format == FormatIndex {
		p, _, _, err := backend.ResolvePrecision("precision", opts.Precision, backend.NameOf(m.Backend))
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		if p == backend.BF16 {
			prec = p
		}
	}
	if prec != "" && q.Int8() {
		return nil, fmt.Errorf("export: precision %s and quantize %s: one or the other (int8 weights run on the onnx backend, bf16 on go or xla)", prec, q)
	}
	if opts.Format == FormatIndex {
		if err := m.Quantize(q); err != nil {
			return nil, fmt.Errorf("export: index: %w", err)
		}
		if err := m.SetPrecision(prec); err != nil {
			return nil, fmt.Errorf("export: index: %w", err)
		}
	}
	out, err := checkOut(opts.Out, opts.Force)
	if err != nil {
		return nil, err
	}
	// Missing parents are created (0755, as mkdir -p), and removed again if the export fails.
	made, err := atomicfile.MkdirAll(filepath.Dir(out))
	if err != nil {
		return nil, fmt.Errorf("export: create the parent directory of output %s: %w", out, err)
	}
	ok := false
	defer func() {
		if !ok {
			atomicfile.RemoveCreated(made)
		}
	}()
	tmp, err := atomicfile.TempDir(filepath.Dir(out), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op after the final rename
	man := &Manifest{Toolret: Version(), Format: opts.Format, Kind: m.Kind, Source: opts.Source,
		DataFingerprint: m.Fingerprint, Similarity: m.Similarity, Marker: m.Marker, Towers: map[string]string{},
		QueryPrompt: m.QueryPrompt, ToolPrompt: m.ToolPrompt, Quantization: q, Precision: prec}
	if man.Source == "" {
		man.Source = m.Source
	}
	if m.Head != nil {
		man.Labels = m.Head.Labels
	}
	switch opts.Format {
	case FormatHF:
		if opts.LoRA == LoRAAdapter {
			var abs string
			if abs, err = filepath.Abs(filepath.Join(out, LoRABaseDir)); err == nil {
				err = writeLoRAAdapter(m, tmp, abs, man)
			}
		} else {
			err = writeHF(m, tmp, man)
		}
		if err == nil && recipe != nil {
			var b []byte
			if b, err = marshalRecipe(recipe); err == nil {
				err = writeFile(tmp, RecipeFile, b)
			}
			if rr := recipe.Reranker; err == nil && rr != nil {
				err = copyReranker(tmp, rr.Path, rr.Dir)
			}
		}
	case FormatONNX:
		err = writeONNX(m, tmp, man)
	case FormatIndex:
		if recipe != nil {
			man.Hybrid, man.Clauses = recipe.Hybrid, recipe.Clauses
			if rr := recipe.Reranker; rr != nil {
				if err = copyReranker(tmp, RerankerDir, rr.Dir); err != nil {
					return nil, err
				}
				man.Reranker = &RerankerRecipe{Path: RerankerDir, Depth: rr.Depth, Weight: rr.Weight}
			}
		}
		switch k.Export.FirstStage {
		case FirstStageMLC:
			err = writeMLCIndex(m, tmp, man, opts)
		case FirstStageBiEncoder:
			err = writeIndex(m, tmp, man, opts)
		default:
			err = fmt.Errorf("export: -format index: kind %s registers first stage %q (want %s or %s)", m.Kind, k.Export.FirstStage, FirstStageBiEncoder, FirstStageMLC)
		}
	}
	if err != nil {
		return nil, err
	}
	if man.Files, err = hashTree(tmp); err != nil {
		return nil, err
	}
	if err := jsonfile.Write(filepath.Join(tmp, ManifestFile), man); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := install(tmp, out); err != nil {
		return nil, err
	}
	ok = true
	return man, nil
}

// checkOut cleans the output path and checks it can be (re)placed: absent, an empty
// directory, or with force a directory. Symbolic links are refused.
func checkOut(out string, force bool) (string, error) {
	if strings.TrimSpace(out) == "" {
		return "", errors.New("export: no output directory")
	}
	abs, err := filepath.Abs(filepath.Clean(out))
	if err != nil {
		return "", fmt.Errorf("export: output %s: %w", out, err)
	}
	if filepath.Dir(abs) == abs {
		return "", fmt.Errorf("export: output %s is a filesystem root", out)
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		// Missing parents are created by Export; the nearest existing one must be a directory.
		for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
			pfi, perr := os.Stat(p)
			if perr == nil && !pfi.IsDir() {
				return "", fmt.Errorf("export: output %s: %s is not a directory", abs, p)
			}
			if perr == nil || filepath.Dir(p) == p {
				break
			}
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return abs, nil
	case err != nil:
		return "", fmt.Errorf("export: output %s: %w", abs, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", fmt.Errorf("export: output %s is a symbolic link; give the real directory", abs)
	case !fi.IsDir():
		return "", fmt.Errorf("export: output %s exists and is not a directory", abs)
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		return "", fmt.Errorf("export: output %s: %w", abs, err)
	}
	if len(ents) > 0 && !force {
		return "", fmt.Errorf("export: output directory %s exists and is not empty (use -force to replace it)", abs)
	}
	return abs, nil
}

// copyReranker copies the cross-encoder directory src into root/rel (a recipe's reranker).
func copyReranker(root, rel, src string) error {
	dst, err := path(root, filepath.FromSlash(rel))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := copyFiles(dst, src, nil); err != nil {
		return fmt.Errorf("export: copy the recipe's reranker %s: %w", src, err)
	}
	return nil
}

// install moves the finished export tmp to out, replacing out if it exists.
func install(tmp, out string) error {
	if _, err := os.Lstat(out); err == nil {
		old, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".old-")
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		os.Remove(old)
		if err := os.Rename(out, old); err != nil {
			return fmt.Errorf("export: move the old %s aside: %w", out, err)
		}
		if err := os.Rename(tmp, out); err != nil {
			os.Rename(old, out)
			return fmt.Errorf("export: %w", err)
		}
		return os.RemoveAll(old)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// hashTree returns the sha256 of every regular file under root (slash paths). Anything else
// than regular files and directories (a symbolic link) is an error.
func hashTree(root string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("export: %s is not a regular file", rel)
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return fmt.Errorf("export: hash %s: %w", rel, err)
		}
		files[filepath.ToSlash(rel)] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	return files, err
}

// path joins a relative, local name onto root, refusing names that would leave it.
func path(root, name string) (string, error) {
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("export: refusing to write %q outside the output directory", name)
	}
	return filepath.Join(root, name), nil
}

// writeFile writes b to root/name (parents created); name must stay inside root.
func writeFile(root, name string, b []byte) error {
	p, err := path(root, name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// writeJSON writes v as indented JSON to root/name (jsonfile.Write: durably, parents
// created); name must stay inside root.
func writeJSON(root, name string, v any) error {
	p, err := path(root, name)
	if err != nil {
		return err
	}
	if err := jsonfile.Write(p, v); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// ReadManifest reads an export's manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) && isRun(dir) {
		return nil, fmt.Errorf("no %s: this is a training run, not an exported index: export it first with `toolret export -run %s -format index -out OUT`: %w",
			ManifestFile, dir, err)
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return &m, nil
}

// isRun reports whether dir looks like a training run or one of its checkpoints.
func isRun(dir string) bool {
	for _, f := range []string{rundir.MetaFile, "train_config.json", "checkpoints", "state.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// TowerDir returns the directory of a tower within an export directory: the tower named name
// when the export has it, else its single tower.
func (m *Manifest) TowerDir(dir, name string) (string, error) {
	rel, ok := m.Towers[name]
	if !ok {
		rel, ok = m.Towers["model"]
	}
	if !ok {
		return "", fmt.Errorf("export %s: no %q tower (towers: %v)", dir, name, keys(m.Towers))
	}
	p, err := path(dir, rel)
	if err != nil && rel != "." {
		return "", fmt.Errorf("export %s: manifest: %w", dir, err)
	}
	return p, nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

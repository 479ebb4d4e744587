package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomlx/compute"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/library"
)

// StateDir is the default state directory of library file lib: beside it, its name without
// .jsonl plus ".toolret" ("tools.jsonl" → "tools.toolret").
func StateDir(lib string) string {
	return strings.TrimSuffix(lib, ".jsonl") + ".toolret"
}

// UsageFile is the usage log's name in a state directory.
const UsageFile = "usage.jsonl"

// IndexDir is the directory of the zero-shot index of model ref in state directory state:
// "index-" and the start of the sha256 of the model reference (a local path made absolute).
func IndexDir(state, ref string) string {
	key := ref
	if _, err := os.Stat(ref); err == nil {
		if abs, err := filepath.Abs(ref); err == nil {
			key = abs
		}
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(state, "index-"+hex.EncodeToString(sum[:6]))
}

// BuildIndex returns the index of library l (read from file name) embedded by the
// pre-trained model ref (export.Open: a run, a checkpoint, a HuggingFace directory or a hub
// id) in state directory state (IndexDir). An index already there is reused as it is: the
// caller syncs it to the library (Gateway.SyncIndex embeds only new and changed tools); else
// it is built (export.Export FormatIndex; written beside and renamed into place, so a crash
// leaves none). built reports which.
func BuildIndex(ctx context.Context, l *library.Library, name, ref, state string, be compute.Backend) (dir string, built bool, err error) {
	return BuildIndexQuantized(ctx, l, name, ref, state, be, export.QuantDefault)
}

// BuildIndexQuantized is BuildIndex with the model's weights quantized as q
// (export.Model.Quantize; int8 needs the onnx backend): an int8 index has its own directory
// (IndexDir of ref plus "|" and q) and records q, so that it embeds queries and new tools in
// int8 too.
func BuildIndexQuantized(ctx context.Context, l *library.Library, name, ref, state string, be compute.Backend, q export.Quantization) (dir string, built bool, err error) {
	return BuildIndexAt(ctx, l, name, ref, state, be, q, "")
}

// BuildIndexAt is BuildIndexQuantized with the tools embedded at precision (export.Options.
// Precision: "" or backend.FP32, backend.BF16, backend.AutoPrecision): a bf16 index has its
// own directory (IndexDir of ref plus "|bf16") and records it, so that it embeds queries and
// new tools in bf16 too.
func BuildIndexAt(ctx context.Context, l *library.Library, name, ref, state string, be compute.Backend, q export.Quantization, precision string) (dir string, built bool, err error) {
	if err := export.CheckQuantization(be, q); err != nil {
		return "", false, err
	}
	if precision != "" {
		p, _, _, err := backend.ResolvePrecision("-precision", precision, backend.NameOf(be))
		if err != nil {
			return "", false, err
		}
		if precision = p; p != backend.BF16 {
			precision = ""
		}
	}
	switch {
	case q.Int8():
		dir = IndexDir(state, ref+"|"+string(q))
	case precision != "":
		dir = IndexDir(state, ref+"|"+precision)
	default:
		dir = IndexDir(state, ref)
	}
	if _, err := os.Stat(filepath.Join(dir, export.ManifestFile)); err == nil {
		return dir, false, nil
	}
	if err := os.MkdirAll(state, 0o755); err != nil {
		return "", false, fmt.Errorf("state directory: %w", err)
	}
	d, err := data.FromLibrary(strings.TrimSuffix(filepath.Base(name), ".jsonl"), l)
	if err != nil {
		return "", false, err
	}
	m, err := export.Open(ctx, ref, be)
	if err != nil {
		return "", false, fmt.Errorf("-model %s: %w", ref, err)
	}
	if q.Int8() {
		if err := m.Quantize(q); err != nil {
			return "", false, fmt.Errorf("-model %s: %w", ref, err)
		}
	}
	if m.Recipe != nil && m.Recipe.Reranker != nil {
		// Serve applies the recipe's reranker from the model directory (as it applies the
		// rest of the recipe, also to an index built before the recipe was): no copy of the
		// cross-encoder in the state directory.
		r := *m.Recipe
		r.Reranker, m.Recipe = nil, &r
	}
	if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: dir, Data: d, DataSource: name, Force: true, Precision: precision}); err != nil {
		return "", false, fmt.Errorf("indexing %s with %s: %w", name, ref, err)
	}
	return dir, true, nil
}

// SyncIndex makes the live index hold exactly the library's tools, as one logged update
// (only new and changed tools are embedded): an index built earlier, or an exported one,
// then serves the library as it is now. It returns what it changed.
func (g *Gateway) SyncIndex() (added, changed, deleted int, err error) {
	g.libMu.Lock()
	defer g.libMu.Unlock()
	start := time.Now()
	l := g.Library()
	d, err := data.FromLibrary("library", l)
	if err != nil {
		return 0, 0, 0, err
	}
	added, changed, deleted, err = g.store.Sync(export.ToolRecords(d), d.Fingerprint(), g.opts.LibraryPath)
	if err == nil && added+changed+deleted > 0 {
		g.log.Info("index synced to the library", "added", added, "changed", changed, "deleted", deleted, "ms", time.Since(start).Milliseconds())
	}
	return added, changed, deleted, err
}

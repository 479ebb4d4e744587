package toolret

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/toolindex"
)

// OpenModel opens the model ref names as an encoder on the named backend ("" or "go",
// "onnx", "xla:cpu", "xla:cuda"): a trained run or one of its checkpoints, a HuggingFace or
// sentence-transformers directory, or a hub id org/name[@revision] (resolved in the Hugging
// Face hub cache, downloaded when missing). Embed texts with its Embed method.
func OpenModel(ctx context.Context, ref, backendName string) (*export.Model, error) {
	be, err := backend.Open(backend.Name(backendName))
	if err != nil {
		return nil, err
	}
	return export.Open(ctx, ref, be)
}

// OpenIndex opens an exported index (Export with export.FormatIndex) as a tool retriever on
// the named backend; opts add a reranker, a BM25 hybrid, or serve the first stage alone.
// Retrieve answers one query, RetrieveBatch several.
func OpenIndex(dir, backendName string, opts ...toolindex.Option) (*toolindex.Index, error) {
	be, err := backend.Open(backend.Name(backendName))
	if err != nil {
		return nil, err
	}
	return toolindex.Load(dir, append([]toolindex.Option{toolindex.WithBackend(be)}, opts...)...)
}

// ImportModel installs the model directory dir into the Hugging Face hub cache (HF_HUB_CACHE,
// else $HF_HOME/hub, else ~/.cache/huggingface/hub) as the hub id id ("org/name"), so that id
// resolves offline; it returns the snapshot directory.
func ImportModel(id, dir string) (string, error) {
	hid, ok := hub.ParseID(id)
	if !ok || hid.Revision != "" {
		return "", fmt.Errorf("import %s: %q is not a hub id org/name", dir, id)
	}
	return hub.Import(hub.CacheDir(), hid, "", "main", dir)
}

// ImportONNXModel rebuilds the HuggingFace / sentence-transformers directory of a BERT encoder
// exported to ONNX by PyTorch (export.ImportONNX: in names the graph, its tokenizer.json and
// the model card's pooling) and installs it into the hub cache as id ("org/name"), as
// `toolret hub import-onnx` does; it returns the snapshot directory.
func ImportONNXModel(id string, in export.ONNXImport) (string, error) {
	if hid, ok := hub.ParseID(id); !ok || hid.Revision != "" {
		return "", fmt.Errorf("import %s: %q is not a hub id org/name", in.Model, id)
	}
	tmp, err := os.MkdirTemp("", "toolret-import-onnx-")
	if err != nil {
		return "", fmt.Errorf("import %s: %w", in.Model, err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "model")
	if err := export.ImportONNX(dir, in); err != nil {
		return "", err
	}
	return ImportModel(id, dir)
}

package evalcmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/rank"
)

// setModel resolves -model: a run becomes -run, a pre-trained directory (or hub id) o.model.
func (o *options) setModel(ref string) error {
	if ref == "" {
		if o.prompts.Query != nil || o.prompts.Tool != nil {
			return fmt.Errorf("-query-prompt and -tool-prompt apply to -model")
		}
		return nil
	}
	if o.run != "" || o.index != "" {
		return fmt.Errorf("-model names the model to evaluate: not with -run or -index")
	}
	dir, err := hub.Resolve(context.Background(), ref)
	if err != nil {
		return fmt.Errorf("-model: %w", err)
	}
	if !export.IsHFDir(dir) {
		if o.prompts.Query != nil || o.prompts.Tool != nil {
			return fmt.Errorf("-query-prompt and -tool-prompt apply to a pre-trained -model, not to the run %s", dir)
		}
		o.run = dir
		return nil
	}
	o.model = dir
	return nil
}

// buildModel ranks with a pre-trained model zero-shot: its index over d's tools is exported
// into a temporary directory (removed by o.cleanup) and served as -index serves one.
func buildModel(o *options, d *data.Dataset) (rank.QueryRanker, string, error) {
	be, err := backend.Open(backend.Name(o.backend))
	if err != nil {
		return nil, "", fmt.Errorf("-backend: %w", err)
	}
	m, err := export.LoadHF(o.model, be)
	if err != nil {
		return nil, "", fmt.Errorf("-model: %w", err)
	}
	if err := o.prompts.Apply(m); err != nil {
		return nil, "", fmt.Errorf("-model: %w", err)
	}
	if err := o.lengths.Apply(m); err != nil {
		return nil, "", fmt.Errorf("-model: %w", err)
	}
	if err := m.Quantize(o.quantize); err != nil {
		return nil, "", fmt.Errorf("-quantize: %w", err)
	}
	if o.noRecipe {
		m.Recipe = nil
	}
	tmp, err := os.MkdirTemp("", "toolret-eval-")
	if err != nil {
		return nil, "", err
	}
	o.tmp = append(o.tmp, tmp)
	src := o.data
	if src == "" {
		src = "default"
	}
	out := filepath.Join(tmp, "index")
	if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: out, Data: d, DataSource: src, Source: o.model}); err != nil {
		return nil, "", err
	}
	o.index = out
	r, desc, err := buildIndex(o, d)
	if err != nil {
		return nil, "", err
	}
	desc = fmt.Sprintf("%s zero-shot, %s", o.model, desc)
	if m.QueryPrompt != "" || m.ToolPrompt != "" {
		desc += fmt.Sprintf(", prompts query %q tool %q", m.QueryPrompt, m.ToolPrompt)
	}
	return r, desc, nil
}

// cleanup removes the temporary directories of the evaluation.
func (o *options) cleanup() {
	for _, d := range o.tmp {
		os.RemoveAll(d)
	}
	o.tmp = nil
}

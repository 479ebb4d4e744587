package evalcmd

import (
	"context"
	"fmt"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/hub"
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

// cleanup closes the evaluations the options set up (the temporary indexes of -runs'
// model: entries).
func (o *options) cleanup() {
	for _, e := range o.evals {
		e.Close()
	}
	o.evals = nil
}

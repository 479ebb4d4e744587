package encoder

import (
	"fmt"
	"sort"
	"strings"

	"github.com/toolret/toolret/models/hflayers"
)

// LoRA is an adapter configuration (see hflayers.LoRA).
type LoRA = hflayers.LoRA

// loraEncoder is implemented by the encoders whose Linear layers are hflayers.Spec.Dense,
// which LoRA adapts.
type loraEncoder interface {
	// LoRAModules returns the module names (PEFT's target_modules) LoRA can adapt, and the
	// default ones: the attention's query and value projections.
	LoRAModules() (valid, defaults []string)
}

// LoRAModules returns the Linear module names LoRA can adapt in c (PEFT's target_modules
// names: query, key, value, dense for BERT and XLM-RoBERTa; q, k, v, o, dense for MPNet) and
// the default targets (the query and value projections, as PEFT's default for these
// models). An encoder without LoRA support is an error naming those that have it.
func LoRAModules(c Config) (valid, defaults []string, err error) {
	if l, ok := c.(loraEncoder); ok {
		valid, defaults = l.LoRAModules()
		return valid, defaults, nil
	}
	return nil, nil, fmt.Errorf("lora: model_type %q does not support LoRA (supported: %s)", c.ModelType(), strings.Join(LoRAModelTypes(), ", "))
}

// LoRAModelTypes lists the registered model types that support LoRA.
func LoRAModelTypes() []string {
	var out []string
	for _, mt := range ModelTypes() {
		t, err := lookup(mt)
		if err != nil || t.New == nil {
			continue
		}
		c, err := t.New(Sizes{})
		if err != nil {
			continue
		}
		if _, ok := c.(loraEncoder); ok {
			out = append(out, mt)
		}
	}
	sort.Strings(out)
	return out
}

// CheckLoRA validates l for the encoder c.
func CheckLoRA(c Config, l LoRA) error {
	valid, _, err := LoRAModules(c)
	if err != nil {
		return err
	}
	return l.Validate(valid)
}

func (b bertConfig) LoRAModules() (valid, defaults []string) {
	return []string{"query", "key", "value", "dense"}, []string{"query", "value"}
}

func (x xlmrConfig) LoRAModules() (valid, defaults []string) {
	return []string{"query", "key", "value", "dense"}, []string{"query", "value"}
}

func (m mpnetConfig) LoRAModules() (valid, defaults []string) {
	return []string{"q", "k", "v", "o", "dense"}, []string{"q", "v"}
}

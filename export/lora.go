package export

import (
	"fmt"
	"path/filepath"

	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/safetensors"
)

// How an export writes a bi-encoder trained with LoRA (Options.LoRA).
const (
	// LoRAMerged writes the adapters merged into the base weights: the directory of a full
	// fine-tune (the default).
	LoRAMerged = "merged"
	// LoRAAdapter writes a PEFT adapter directory: adapter_config.json and
	// adapter_model.safetensors (PEFT's names, "base_model.model.<hf name>.lora_A.weight"),
	// with the frozen base model the adapter applies to, as an hf export, in LoRABaseDir.
	LoRAAdapter = "adapter"
)

// LoRA adapter files.
const (
	AdapterConfigFile  = "adapter_config.json"
	AdapterWeightsFile = "adapter_model.safetensors"
	// LoRABaseDir is the subdirectory of a LoRAAdapter export holding the base model.
	LoRABaseDir = "base"
)

// peftPrefix is the prefix of the tensor names PEFT saves: PeftModel.base_model (a
// LoraModel) holds the wrapped model as .model.
const peftPrefix = "base_model.model."

// checkLoRA validates mode for m and the export format.
func checkLoRA(m *Model, mode, format string) error {
	switch mode {
	case "", LoRAMerged:
		return nil
	case LoRAAdapter:
	default:
		return fmt.Errorf("export: lora %q: want %s or %s", mode, LoRAMerged, LoRAAdapter)
	}
	switch {
	case m.Adapter == nil:
		return fmt.Errorf("export: -lora-export %s: %s was not trained with LoRA (train biencoder -lora-rank)", mode, m.Source)
	case format != FormatHF:
		return fmt.Errorf("export: -lora-export %s: a PEFT adapter is written by -format %s, not %s", mode, FormatHF, format)
	case !m.Adapter.Shared || len(m.Towers) != 1:
		return fmt.Errorf("export: -lora-export %s: a PEFT adapter adapts one model; %s has separate query and tool towers (export it merged)", mode, m.Source)
	}
	return nil
}

// writeLoRAAdapter writes m's adapter as a PEFT adapter directory into root and the base
// model it applies to (the merged weights as they were before the merge) as an hf export
// into root/LoRABaseDir; adapter_config.json's base_model_name_or_path is baseName (the
// absolute path of the installed base directory).
func writeLoRAAdapter(m *Model, root, baseName string, man *Manifest) error {
	ad := m.Adapter
	merged, err := biencoder.SwapWeights(m.Store, ad.Base)
	if err != nil {
		return fmt.Errorf("export: lora adapter: %w", err)
	}
	m.resetRunners()
	werr := writeHF(m, filepath.Join(root, LoRABaseDir), man)
	if _, err := biencoder.SwapWeights(m.Store, merged); err != nil && werr == nil {
		werr = fmt.Errorf("export: lora adapter: %w", err)
	}
	m.resetRunners()
	if werr != nil {
		return werr
	}
	for k, v := range man.Towers {
		man.Towers[k] = filepath.Join(LoRABaseDir, v)
	}
	var ts []safetensors.Tensor
	for _, t := range ad.Tensors {
		ts = append(ts, safetensors.Tensor{Name: peftPrefix + t.Name, Shape: t.Dims, Data: t.Data})
	}
	if err := safetensors.Write(filepath.Join(root, AdapterWeightsFile), ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("export: lora adapter: %w", err)
	}
	cfg := map[string]any{
		"peft_type":               "LORA",
		"task_type":               "FEATURE_EXTRACTION",
		"base_model_name_or_path": baseName,
		"r":                       ad.LoRA.Rank,
		"lora_alpha":              ad.LoRA.Alpha,
		"lora_dropout":            ad.LoRA.Dropout,
		"target_modules":          ad.LoRA.Targets,
		"bias":                    "none",
		"fan_in_fan_out":          false,
		"inference_mode":          true,
		"init_lora_weights":       true,
		"modules_to_save":         nil,
		"use_rslora":              false,
		"use_dora":                false,
		"revision":                nil,
	}
	return writeJSON(root, AdapterConfigFile, cfg)
}

// resetRunners drops the encoders m built (which may hold a copy of the weights, e.g. an
// ONNX Runtime session), after the store's weights changed.
func (m *Model) resetRunners() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runners, m.qcalls = nil, nil
}

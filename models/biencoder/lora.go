package biencoder

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/models/hflayers"
	"github.com/toolret/toolret/train"
)

// freezeBase marks every variable under the tower scope s non-trainable but the LoRA adapter
// weights, so that the optimizer (which updates only trainable variables) leaves the base
// weights alone: no gradient step, no optimizer state, no weight decay.
func freezeBase(s *model.Scope) {
	for v := range s.IterVariables() {
		if !hflayers.IsLoRAVariable(v.Path()) {
			v.SetTrainable(false)
		}
	}
}

// AdapterTensor is one LoRA weight of a trained bi-encoder, by its HF name
// ("encoder.layer.0.attention.self.query.lora_A.weight") in the tower whose variables are
// under Base.
type AdapterTensor struct {
	Base, Name string
	Dims       []int
	Data       []float32
}

// Adapter is what MergeLoRA took out of a bi-encoder: the LoRA configuration, the adapter
// weights and the base weights they were merged into (HF name -> values, per tower base),
// enough to write a PEFT adapter directory of the unmerged model.
type Adapter struct {
	LoRA    encoder.LoRA
	Shared  bool
	Tensors []AdapterTensor // sorted by base and name
	// Base holds the original values of the merged Linear weights, keyed by Base + "|" + HF
	// name ("|encoder.layer.0.attention.self.query.weight" for a shared tower).
	Base map[string][]float32
}

// hfName converts a variable path under the tower scope path base into an HF name
// ("/query/encoder/layer/0/output/dense/bias" under "/query": "encoder.layer.0.output.dense.bias").
func hfName(base, path string) string {
	p := strings.TrimPrefix(path, base)
	return strings.ReplaceAll(strings.Trim(p, "/"), "/", ".")
}

func floats(v *model.Variable) ([]float32, []int, error) {
	t, err := v.Value()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", v.Path(), err)
	}
	d, err := tensors.CopyFlatData[float32](t)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", v.Path(), err)
	}
	return d, t.Shape().Dimensions, nil
}

// MergeLoRA merges the LoRA adapters of a bi-encoder trained with LoRA into its base
// weights, W + (alpha/r)·B·A for each adapted Linear, deletes the adapter variables and turns
// LoRA off in e.Cfg: the embedder then embeds as before (up to float32 rounding) with a plain
// encoder, in the layout of a full fine-tune. It returns what it took out (nil, and nothing
// changed, without LoRA).
func (e *Embedder) MergeLoRA() (*Adapter, error) {
	if e.Cfg.LoRA == nil {
		return nil, nil
	}
	l := *e.Cfg.LoRA
	ad := &Adapter{LoRA: l, Shared: e.Cfg.Shared, Base: map[string][]float32{}}
	bases := []string{""}
	if !e.Cfg.Shared {
		bases = []string{e.Cfg.TowerBase(QueryTower), e.Cfg.TowerBase(ToolTower)}
	}
	type merge struct {
		w      *model.Variable
		merged []float32
		dims   []int
		drop   []string
	}
	var merges []merge
	for _, base := range bases {
		s := encoder.In(e.Store.RootScope(), base)
		var linears []string
		for v := range s.IterVariables() {
			if p := v.Path(); strings.HasSuffix(p, "/lora_A/weight") && !strings.HasPrefix(p, train.OptimizerScope+"/") {
				linears = append(linears, strings.TrimSuffix(p, "/lora_A/weight"))
			}
		}
		sort.Strings(linears)
		if len(linears) == 0 {
			return nil, fmt.Errorf("biencoder: merge LoRA: the model is configured with LoRA but its tower %q has no adapter weights", base)
		}
		for _, lin := range linears {
			w, a, b := e.Store.GetVariable(lin+"/weight"), e.Store.GetVariable(lin+"/lora_A/weight"), e.Store.GetVariable(lin+"/lora_B/weight")
			if w == nil || b == nil {
				return nil, fmt.Errorf("biencoder: merge LoRA: %s has lora_A but no weight or lora_B", lin)
			}
			wd, wdims, err := floats(w)
			if err != nil {
				return nil, fmt.Errorf("biencoder: merge LoRA: %w", err)
			}
			ad2, adims, err := floats(a)
			if err != nil {
				return nil, fmt.Errorf("biencoder: merge LoRA: %w", err)
			}
			bd, bdims, err := floats(b)
			if err != nil {
				return nil, fmt.Errorf("biencoder: merge LoRA: %w", err)
			}
			if len(wdims) != 2 || len(adims) != 2 || len(bdims) != 2 {
				return nil, fmt.Errorf("biencoder: merge LoRA: %s: weight %v, lora_A %v, lora_B %v: want matrices", lin, wdims, adims, bdims)
			}
			m, err := hflayers.MergeLoRA(wd, bd, ad2, wdims[0], wdims[1], adims[0], l.Scale())
			if err != nil {
				return nil, fmt.Errorf("biencoder: merge LoRA: %s: %w", lin, err)
			}
			name := hfName(s.Scope(), lin)
			ad.Base[base+"|"+name+".weight"] = wd
			ad.Tensors = append(ad.Tensors,
				AdapterTensor{Base: base, Name: name + ".lora_A.weight", Dims: adims, Data: ad2},
				AdapterTensor{Base: base, Name: name + ".lora_B.weight", Dims: bdims, Data: bd})
			merges = append(merges, merge{w: w, merged: m, dims: wdims, drop: []string{a.Path(), b.Path()}})
		}
	}
	// Nothing changes until every adapter was read and merged.
	for _, m := range merges {
		if err := m.w.SetValue(tensors.FromFlatDataAndDimensions(m.merged, m.dims...)); err != nil {
			return nil, fmt.Errorf("biencoder: merge LoRA: %s: %w", m.w.Path(), err)
		}
		for _, p := range m.drop {
			if err := e.Store.DeleteVariable(p); err != nil {
				return nil, fmt.Errorf("biencoder: merge LoRA: %w", err)
			}
		}
	}
	c := *e.Cfg
	c.LoRA = nil
	e.Cfg = &c
	embedMu.Lock()
	e.execs = nil
	embedMu.Unlock()
	return ad, nil
}

// SwapWeights sets each weight of store named in values (keys as Adapter.Base's) to its
// value and returns the values it replaced: SwapWeights(store, ad.Base) restores the base
// weights of a merged model (what a PEFT adapter is applied to), and SwapWeights(store, old)
// with what it returned merges them again.
func SwapWeights(store *model.Store, values map[string][]float32) (map[string][]float32, error) {
	old := map[string][]float32{}
	for key, d := range values {
		base, name, _ := strings.Cut(key, "|")
		v := encoder.Variable(store, base, name)
		if v == nil {
			return nil, fmt.Errorf("biencoder: LoRA base weight %s of tower %q: no such variable", name, base)
		}
		cur, dims, err := floats(v)
		if err != nil {
			return nil, err
		}
		if len(cur) != len(d) {
			return nil, fmt.Errorf("biencoder: LoRA base weight %s: %d values, the variable has %d", name, len(d), len(cur))
		}
		if err := v.SetValue(tensors.FromFlatDataAndDimensions(d, dims...)); err != nil {
			return nil, fmt.Errorf("biencoder: LoRA base weight %s: %w", name, err)
		}
		old[key] = cur
	}
	return old, nil
}

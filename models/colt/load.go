package colt

import (
	"encoding/json"
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/checkpoints"
	"github.com/toolret/toolret/data"
	tgraph "github.com/toolret/toolret/graph"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/rundir"
)

// ConfigFile is the name of COLT's configuration in its checkpoints (train colt stores it in
// every checkpoint, not at the top of the run).
const ConfigFile = "colt.json"

// RunConfig is the content of ConfigFile: the graph stage's configuration and the stage-1
// bi-encoder run its node embeddings were initialised from (and that embeds new queries).
type RunConfig struct {
	Colt      Config `json:"colt"`
	Retriever string `json:"retriever"`
}

// ParseRunConfig reads ConfigFile. Files written before the layer weights existed (no
// "tool_layer_weight") had unweighted layers (weight 1); files written before the stage-1 run
// was called "retriever" name it "init_embeddings", and their contrastive temperature "tau".
func ParseRunConfig(b []byte) (*RunConfig, error) {
	var raw struct {
		Colt      map[string]json.RawMessage `json:"colt"`
		Retriever string                     `json:"retriever"`
		Init      string                     `json:"init_embeddings"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("colt config: %w", err)
	}
	if raw.Colt == nil {
		return nil, fmt.Errorf("colt config: no \"colt\" object")
	}
	var rc RunConfig
	inner, _ := json.Marshal(raw.Colt)
	if err := json.Unmarshal(inner, &rc.Colt); err != nil {
		return nil, fmt.Errorf("colt config: %w", err)
	}
	if _, ok := raw.Colt["tool_layer_weight"]; !ok {
		rc.Colt.ToolWeight, rc.Colt.SceneWeight = 1, 1
	}
	if _, ok := raw.Colt["temperature"]; !ok {
		if t, ok := raw.Colt["tau"]; ok {
			if err := json.Unmarshal(t, &rc.Colt.Temperature); err != nil {
				return nil, fmt.Errorf("colt config: tau: %w", err)
			}
		}
	}
	rc.Retriever = raw.Retriever
	if rc.Retriever == "" {
		rc.Retriever = raw.Init
	}
	if rc.Retriever == "" {
		return nil, fmt.Errorf("colt config: no stage-1 run (\"retriever\")")
	}
	if err := rc.Colt.Validate(); err != nil {
		return nil, err
	}
	return &rc, nil
}

// LoadRun loads a trained COLT run (its best checkpoint) or one of its checkpoints as a
// ranker of d's tools: the stage-1 bi-encoder recorded in the run embeds queries, and the
// trained node tables are propagated over the graphs of the run's recorded training split,
// as train colt scores its test split. d must be the data the run was trained on.
func LoadRun(path string, d *data.Dataset, be compute.Backend) (*Ranker, error) {
	dir, err := rundir.CheckpointDir(path)
	if err != nil {
		return nil, err
	}
	c, err := checkpoints.Load(dir)
	if err != nil {
		return nil, err
	}
	cb, err := c.File(ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("%s has no %s (not a COLT checkpoint): %w", dir, ConfigFile, err)
	}
	rc, err := ParseRunConfig(cb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	run := rundir.RunOf(path)
	meta, err := rundir.Read(run)
	if err != nil {
		return nil, err
	}
	if meta.Kind != "colt" {
		return nil, fmt.Errorf("run %s is a %s run, not a COLT run", run, meta.Kind)
	}
	if meta.Parent != "" && meta.Parent != rc.Retriever {
		return nil, fmt.Errorf("run %s: %s records stage 1 %s, %s records %s", run, rundir.MetaFile, meta.Parent, ConfigFile, rc.Retriever)
	}
	train, _, _, err := rundir.Splits(run, d)
	if err != nil {
		return nil, err
	}
	graphs, err := tgraph.FromSplit(d, train)
	if err != nil {
		return nil, fmt.Errorf("colt %s: %w", run, err)
	}
	store := model.NewStore()
	if err := c.Restore(store, be); err != nil {
		return nil, err
	}
	v := store.GetVariable(ToolVar)
	if v == nil {
		return nil, fmt.Errorf("%s: no %s table", dir, ToolVar)
	}
	dims := v.Shape().Dimensions
	if len(dims) != 2 || dims[0] != len(d.Tools) {
		return nil, fmt.Errorf("%s: %s is %v, the dataset has %d tools", dir, ToolVar, dims, len(d.Tools))
	}
	for _, t := range []struct {
		path string
		n    int
	}{{QueryVar, len(d.Queries)}, {SceneVar, len(d.Scenes)}} {
		v := store.GetVariable(t.path)
		if v == nil || v.Shape().Rank() != 2 || v.Shape().Dimensions[0] != t.n || v.Shape().Dimensions[1] != dims[1] {
			var got any = "missing"
			if v != nil {
				got = v.Shape().Dimensions
			}
			return nil, fmt.Errorf("%s: %s is %v, want [%d %d] (the dataset's queries or scenes)", dir, t.path, got, t.n, dims[1])
		}
	}
	stage1, err := biencoder.LoadRun(rc.Retriever, be)
	if err != nil {
		return nil, fmt.Errorf("colt %s: stage 1: %w", run, err)
	}
	if h := stage1.Cfg.Encoder.Hidden(); h != dims[1] {
		return nil, fmt.Errorf("colt %s: stage 1 %s embeds in %d dimensions, the COLT tables have %d", run, rc.Retriever, h, dims[1])
	}
	task := &Task{Cfg: rc.Colt, Data: d, Train: train, Graphs: graphs, Dim: dims[1], Backend: be}
	sc, err := scorer(task, store)
	if err != nil {
		return nil, fmt.Errorf("colt %s: %w", run, err)
	}
	return &Ranker{Stage1: stage1, Scorer: sc}, nil
}

// scorer is Task.Scorer with the graph-building panics of a damaged checkpoint returned as
// errors.
func scorer(t *Task, store *model.Store) (sc *Scorer, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return t.Scorer(store)
}

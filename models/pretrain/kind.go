package pretrain

import "github.com/toolret/toolret/kinds"

// Kind is the model kind of a pre-training run (rundir.Meta.Kind). Its runs hold their
// encoder as a bi-encoder too (biencoder.json), which ranks, evaluates and exports for it.
const Kind = "pretrain"

func init() { kinds.Register(kinds.Kind{Name: Kind, ConfigFile: ConfigFile, Base: "biencoder"}) }

package crossencoder

import "github.com/toolret/toolret/kinds"

// Kind is the model kind of a cross-encoder run (rundir.Meta.Kind). It reranks a first
// stage's candidates: it does not rank tools on its own.
const Kind = "crossencoder"

func init() { kinds.Register(kinds.Kind{Name: Kind, ConfigFile: ConfigFile}) }

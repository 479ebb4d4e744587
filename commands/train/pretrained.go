package traincmd

import (
	"context"
	"flag"
	"fmt"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/hub"
	"github.com/toolret/toolret/internal/cli"
)

// pretrainedLR is the default peak learning rate when fine-tuning pre-trained weights
// (sentence-transformers' default is 2e-5 as well).
const pretrainedLR = 2e-5

// resolveInit resolves -init REF in place: a run or directory stays as it is, a hub id
// org/name[@revision] becomes its snapshot in the Hugging Face hub cache (downloaded when
// missing). For pre-trained weights (an HF directory) the flags the user left unset follow
// the model: -pooling that of its sentence-transformers Pooling module, -lr pretrainedLR.
// pooling and lr may be nil for commands without those flags.
func resolveInit(fs *flag.FlagSet, init, pooling *string, lr *float64) error {
	if *init == "" {
		return nil
	}
	dir, err := hub.Resolve(context.Background(), *init)
	if err != nil {
		return fmt.Errorf("-init: %w", err)
	}
	*init = dir
	if !export.IsHFDir(dir) {
		return nil
	}
	set := cli.Set(fs)
	if lr != nil && !set["lr"] {
		*lr = pretrainedLR
	}
	if pooling != nil && !set["pooling"] {
		p, ok, err := export.STPooling(dir)
		if err != nil {
			return fmt.Errorf("-init: %w", err)
		}
		if ok {
			*pooling = string(p)
		}
	}
	return nil
}

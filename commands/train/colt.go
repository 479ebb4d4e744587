package traincmd

import (
	"context"
	"flag"
	"fmt"

	"github.com/toolret/toolret/internal/check"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/models/colt"
)

// coltCmd is `train colt`: the flags of colt.TrainConfig. It trains COLT's graph stage on top
// of a trained bi-encoder run (-first-stage), on that run's recorded training split, selecting
// on its recorded dev split.
func coltCmd(args []string) error {
	fs := flag.NewFlagSet("train colt", flag.ContinueOnError)
	def := colt.DefaultTrainConfig()
	cli.Data(fs)
	retriever := cli.FirstStage(fs)
	runDir := cli.Run(fs, "run directory (default runs/colt-<time>)")
	resume := cli.Resume(fs)
	m := def.Model
	layers := fs.Int("layers", m.Layers, "LightGCN layers")
	lambda := fs.Float64("lambda", m.Lambda, "weight of the cross-view contrastive losses")
	temp := fs.Float64("temperature", m.Temperature, "temperature of the cross-view contrastive losses")
	listLen := fs.Int("list-len", m.ListLen, "tools per query in the list-wise loss")
	dropout := fs.Float64("edge-dropout", m.EdgeDropout, "edge dropout, re-sampled every epoch, in [0, 1)")
	pairwise := fs.Bool("pairwise", m.Pairwise, "ablation: pairwise (BPR) loss instead of list-wise")
	noContrast := fs.Bool("no-contrast", m.NoContrast, "ablation: no cross-view contrastive loss")
	freezeQ := fs.Bool("freeze-queries", m.FreezeQueries, "keep query nodes at their stage-1 embeddings (train tools and scenes only)")
	holdOut := fs.Bool("hold-out", m.HoldOut, "remove the batch's queries from the graphs for the step and score them from their stage-1 embeddings, as test queries are")
	inductive := fs.Bool("inductive", m.Inductive, "attach queries outside the graph (dev, test, new) to the training scenes by soft edges, and train the batch held out and attached the same way")
	attachTemp := fs.Float64("attach-temp", m.AttachTemp, "temperature of the soft query-scene edges of -inductive")
	toolW := fs.Float64("tool-layer-weight", m.ToolWeight, "weight of the propagated layers in the tool view (1: reference)")
	sceneW := fs.Float64("scene-layer-weight", m.SceneWeight, "weight of the propagated layers in the scene view (1: reference)")
	views := fs.String("views", m.Views, "both, scene (scene view only) or tool (tool view only)")
	epochs := fs.Int("epochs", def.Epochs, "epochs")
	batch := fs.Int("batch", def.Batch, "queries per batch")
	lr := fs.Float64("lr", def.LR, "learning rate")
	wd := fs.Float64("weight-decay", def.WeightDecay, "weight decay")
	patience := fs.Int("patience", def.Patience, "early stopping: epochs without dev improvement (0: never)")
	metric := cli.Metric(fs, def.Metric)
	seed := fs.Uint64("seed", def.Seed, "random seed of the graph stage (negatives, order, edge dropout); the dev split is the -first-stage run's")
	be := cli.Backend(fs)
	devices := cli.Devices(fs)
	quiet := cli.Quiet(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if _, err := openRun(fs, runDir, *resume, "colt", "colt", "COLT"); err != nil {
		return err
	}
	cfg := colt.TrainConfig{Model: colt.Config{Layers: *layers, Lambda: *lambda, Temperature: *temp, ListLen: *listLen,
		EdgeDropout: *dropout, Pairwise: *pairwise, NoContrast: *noContrast, Views: *views, FreezeQueries: *freezeQ,
		HoldOut: *holdOut, Inductive: *inductive, AttachTemp: *attachTemp, ToolWeight: *toolW, SceneWeight: *sceneW},
		RunDir: *runDir, Resume: *resume, Retriever: *retriever, Epochs: *epochs, Batch: *batch, LR: *lr, WeightDecay: *wd,
		Patience: *patience, Metric: *metric, Seed: *seed, Backend: *be, Devices: *devices, Quiet: *quiet}
	if err := cfg.Validate(); err != nil {
		return check.Flag(err) // the library names a setting, the command its flag
	}
	d, err := cli.LoadData(fs)
	if err != nil {
		return err
	}
	cfg.Data, cfg.Args = d, cli.Args(fs)
	_, err = colt.Train(context.Background(), cfg)
	return check.Flag(err)
}

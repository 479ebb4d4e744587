package traincmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/internal/cli"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/models/classifier"
	"github.com/toolret/toolret/rundir"
	"github.com/toolret/toolret/tokenize"
	"github.com/toolret/toolret/train"
)

func classifierCmd(args []string) error {
	fs := flag.NewFlagSet("train classifier", flag.ContinueOnError)
	kind := fs.String("kind", classifier.KindQueryType, "querytype (single- vs multi-tool query) or mlc (multi-label over all tools: a retriever)")
	loss := fs.String("loss", "", "querytype: ce (2-way softmax, default) or bce (one logit); mlc: bce (per-tool sigmoid, default) or softmax (multi-positive softmax over all tools, the Tool2Vec paper's code)")
	h := addHeadFlags(fs, 32, 32, 4, "")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *loss == "" {
		*loss = "ce"
		if *kind == classifier.KindMLC {
			*loss = "bce"
		}
	}
	if *h.metric == "" {
		*h.metric = "accuracy"
		if *kind == classifier.KindMLC {
			*h.metric = "ndcg@5"
		}
	}
	if err := checkClassifierFlags(*kind, *loss, *h.metric, *h.maxLen, *h.resume); err != nil {
		return err
	}
	if err := checkPooling(*h.pool); err != nil {
		return err
	}
	d, bk, tr, dev, err := h.setup(*kind, "classifier")
	if err != nil {
		return err
	}
	store := model.NewStore()
	store.SetParam(model.ParamInitialSeed, int64(*h.seed))
	var cfg *classifier.Config
	var tok *tokenize.Tokenizer
	if *h.resume {
		var b []byte
		if b, tok, err = loadResume(*h.runDir, classifier.ConfigFile); err != nil {
			return err
		}
		if cfg, err = classifier.Unmarshal(b); err != nil {
			return err
		}
	} else {
		bc, t, err := h.encoder(store, bk, d, tr)
		if err != nil {
			return err
		}
		tok = t
		pool, bc := h.headPooling(bc)
		cfg = &classifier.Config{Kind: *kind, Encoder: bc, MaxLen: *h.maxLen, LossKind: *loss, Pooling: pool}
		if *kind == classifier.KindMLC {
			cfg.Labels = classifier.ToolLabels(d)
		} else {
			cfg.Labels = []string{classifier.LabelSingle, classifier.LabelMulti}
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	files, err := rundir.WriteModelFiles(*h.runDir, classifier.ConfigFile, cfg.Marshal(), tok)
	if err != nil {
		return err
	}
	task := &classifier.Task{Cfg: cfg, Data: d, Train: tr, Dev: dev, Tok: tok, Backend: bk, BatchSize: *h.batch, Seed: *h.seed, ExtraFiles: files}
	if err := task.Prepare(); err != nil {
		return err
	}
	tc, steps := h.trainConfig(d, task, *h.seed)
	multi := 0
	for _, m := range classifier.QueryTypes(d, tr) {
		if m {
			multi++
		}
	}
	fmt.Fprintf(os.Stderr, "%s\nclassifier %s: %s, %d layers, hidden %d, vocab %d, %d outputs, %s head, %s loss, %d train queries (%d multi-tool), %d dev, %d steps -> %s\n",
		d.Stats(), cfg.Kind, cfg.Encoder.ModelType(), cfg.Encoder.Layers(), cfg.Encoder.Hidden(), cfg.Encoder.Vocab(), cfg.Outputs(), classifier.HeadPooling(cfg.Pooling), cfg.LossKind,
		len(tr.Judged()), multi, len(dev.Queries), steps, *h.runDir)
	if err := h.create(); err != nil {
		return err
	}
	sum, err := train.Run(bk, store, task, tc, *h.resume)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "trained %d steps in %.0fs; best dev %s %.2f at step %d\n", sum.Steps, sum.Seconds, *h.metric, sum.BestMetrics[*h.metric], sum.BestStep)
	if *h.testSplit == "" {
		return nil
	}
	mod, err := classifier.LoadRun(*h.runDir, bk)
	if err != nil {
		return err
	}
	var out any
	if cfg.Kind == classifier.KindMLC {
		r, err := classifier.NewRanker(mod, d)
		if err != nil {
			return err
		}
		rep, err := metrics.Run(context.Background(), d, *h.testSplit, r, metrics.DefaultKs)
		if err != nil {
			return err
		}
		rep.Dataset = d.Name + " (mlc)"
		fmt.Print(rep)
		out = rep
	} else {
		ts, err := d.Split(*h.testSplit)
		if err != nil {
			return err
		}
		res, err := classifier.TypeMetrics(mod, d, ts)
		if err != nil {
			return err
		}
		fmt.Printf("%s / %s: query-type accuracy %.2f (balanced %.2f; single-tool %.2f of %.0f, multi-tool %.2f of %.0f)\n", d.Name, *h.testSplit,
			res["accuracy"], res["balanced_accuracy"], res["acc_single"], res["n_single"], res["acc_multi"], res["n_multi"])
		out = res
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return os.WriteFile(filepath.Join(*h.runDir, "test_metrics.json"), append(b, '\n'), 0o644)
}

// checkClassifierFlags validates -kind, and for a new run -loss and -metric against it (a
// resumed run takes its recorded ones), and -max-len.
func checkClassifierFlags(kind, loss, metric string, maxLen int, resume bool) error {
	if kind != classifier.KindQueryType && kind != classifier.KindMLC {
		return fmt.Errorf("-kind %q: want querytype or mlc", kind)
	}
	if err := checkMaxLen(maxLen, 2, "[CLS], [SEP]"); err != nil || resume {
		return err
	}
	if kind == classifier.KindMLC {
		if loss != "bce" && loss != "softmax" {
			return fmt.Errorf("-loss %q: -kind mlc wants bce or softmax", loss)
		}
		return cli.CheckMetric(metric)
	}
	if loss != "ce" && loss != "bce" {
		return fmt.Errorf("-loss %q: -kind querytype wants ce or bce", loss)
	}
	switch metric {
	case "accuracy", "balanced_accuracy", "acc_single", "acc_multi":
		return nil
	}
	return fmt.Errorf("-metric %q: -kind querytype wants accuracy, balanced_accuracy, acc_single or acc_multi", metric)
}

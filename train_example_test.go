package toolret_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/models/biencoder"
)

// Train a tiny bi-encoder on the embedded default dataset, evaluate it on the test split and
// export it as a HuggingFace / sentence-transformers directory, without any command.
func Example() {
	dir, err := os.MkdirTemp("", "toolret-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	cfg := biencoder.DefaultTrainConfig() // a BERT from scratch on the embedded default dataset
	cfg.RunDir, cfg.Quiet, cfg.Stdout, cfg.Stderr = filepath.Join(dir, "run"), true, io.Discard, io.Discard
	cfg.Model.Layers, cfg.Model.Hidden, cfg.Model.Heads, cfg.Model.VocabSize = 1, 32, 2, 800
	cfg.Training.Epochs, cfg.Split.Test = 1, "" // evaluated below instead
	res, err := toolret.Train(context.Background(), "biencoder", cfg)
	if err != nil {
		log.Fatal(err)
	}
	rep, err := toolret.Evaluate(context.Background(), toolret.EvalConfig{Run: res.RunDir})
	if err != nil {
		log.Fatal(err)
	}
	man, err := toolret.Export(context.Background(), toolret.ExportConfig{Model: res.RunDir, Out: filepath.Join(dir, "hf")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("trained:", res.Summary.Steps > 0)
	fmt.Println("evaluated:", rep.Overall.N > 0, rep.Overall.Recall[5] > 0)
	fmt.Println("exported:", man.Format, man.Kind)
	// Output:
	// trained: true
	// evaluated: true true
	// exported: hf biencoder
}

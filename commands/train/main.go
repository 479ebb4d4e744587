// Package traincmd is the `toolret train` command; it trains toolret models.
//
//	train [biencoder] [flags]   train a bi-encoder tool retriever (the default)
//	train mine -run RUN [flags] mine hard negatives with a trained retriever
//	train colt -first-stage RUN [flags]  COLT's LightGCN stage on a trained bi-encoder
//	train crossencoder -first-stage RUN [flags]  ToolRerank's cross-encoder reranker
//	train classifier -kind querytype|mlc [flags]  query-type or multi-label tool classifier
//	train refiner -first-stage RUN [-candidates bi-encoder|usage|mlc|bm25] [flags]  the Tool2Vec paper's ToolRefiner
//	train migrate -run RUN [-data DIR] [-dev F -seed N]  write run.json for a run made before it existed
//	train feedback -first-stage RUN -llm-url URL -llm-model NAME -out FILE.jsonl [flags]  collect iterative LLM feedback (package feedback)
//	train plot -out FILE RUN...  overlay the training charts of several runs in one page
//	train pretrain [flags]      unsupervised MLM + contrastive pre-training on the tool corpus (package pretrain); -init RUN warm-starts from it
//
// With no flags it trains a small bi-encoder from scratch on the embedded default dataset and
// prints its test metrics. See `train biencoder -h` and `train mine -h`.
package traincmd

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

// Main runs `toolret train` with args (the words after it) and returns the exit code.
func Main(args []string) int {
	cmd := "biencoder"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "biencoder":
		err = biencoderCmd(args)
	case "mine":
		err = mineCmd(args)
	case "colt":
		err = coltCmd(args)
	case "crossencoder":
		err = crossencoderCmd(args)
	case "classifier":
		err = classifierCmd(args)
	case "refiner":
		err = refinerCmd(args)
	case "migrate":
		err = migrateCmd(args)
	case "feedback":
		err = feedbackCmd(args)
	case "pretrain":
		err = pretrainCmd(args)
	case "plot":
		err = plotCmd(args)
	default:
		err = fmt.Errorf("unknown command %q (biencoder, mine, colt, crossencoder, classifier, refiner, migrate, feedback, pretrain, plot)", cmd)
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		return 1
	}
	return 0
}

package fusion_test

import (
	"context"
	"fmt"
	"log"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/metrics"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rank/bm25"
	"github.com/toolret/toolret/rerank"
)

// Two rankers fused on tools never seen in training, with one set of weights for the tools
// the training queries need and another, plus an offset, for the new ones, both picked on a
// dev split carved by tools; then the test split evaluated. The rankers here are two BM25
// variants; a fine-tuned run, a classifier or a pre-trained model plugs in the same way (any
// rank.QueryRanker, or saved rankings: fusion.ReadInput).
func ExampleRanker_TuneGrouped() {
	d, err := data.Default()
	if err != nil {
		log.Fatal(err)
	}
	view, err := d.HoldoutTools(0.2, 1) // 20% of the tools never in training
	if err != nil {
		log.Fatal(err)
	}
	train, dev, err := view.CarveDev("train", 0.1, 1) // dev: 10% of the training tools
	if err != nil {
		log.Fatal(err)
	}
	docs := make([]string, len(view.Tools))
	for i, t := range view.Tools {
		docs[i] = t.Text
	}
	f := &fusion.Ranker{Depth: 100, Norm: rerank.NormZScore, Inputs: []*fusion.Input{
		{Name: "bm25", Live: rank.Texts(bm25.New(docs, bm25.DefaultParams))},
		{Name: "bm25 k1 0.5", Live: rank.Texts(bm25.New(docs, bm25.Params{K1: 0.5, B: 0.3}))},
	}}
	isNew, _ := fusion.NewTools(view, train) // tools no training query needs
	score, err := metrics.ParseMetric("ndcg@5")
	if err != nil {
		log.Fatal(err)
	}
	qs, rel := fusion.SplitQueries(view, dev)
	c, err := f.TuneGrouped(context.Background(), qs, rel, isNew, 5, fusion.TuneOptions{Steps: 10, Metric: "ndcg@5", Score: score})
	if err != nil {
		log.Fatal(err)
	}
	f.G = &c.Grouped
	test, err := view.Split("test")
	if err != nil {
		log.Fatal(err)
	}
	rep, err := metrics.EvaluateSplit(context.Background(), view, test, f, []int{5})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("two sets at least as good as one on dev:", c.Mean >= c.PlainMean)
	fmt.Println("test queries evaluated:", rep.Overall.N == len(test.Judged()))
	// Output:
	// two sets at least as good as one on dev: true
	// test queries evaluated: true
}

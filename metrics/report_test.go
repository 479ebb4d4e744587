package metrics

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/rank"
)

func tinyDataset() *data.Dataset {
	d := &data.Dataset{Name: "tiny", Tools: make([]data.Tool, 4), Queries: make([]data.Query, 3)}
	d.Splits = map[string]*data.Split{
		"train": {Name: "train", Queries: []int{0}, Relevant: map[int][]int{0: {0, 1}}},
		"test":  {Name: "test", Queries: []int{1, 2}, Relevant: map[int][]int{1: {0}, 2: {1, 3}}},
	}
	return d
}

func TestToolRecallDuplicatesAndCutoff(t *testing.T) {
	d := tinyDataset()
	// q1 relevant {0}; q2 relevant {1,3}. q2's ranking repeats tool 1: counted once, at rank 1.
	// Unseen tool 3 is at rank 4 (0-based 3): in top 4, not top 3.
	rankings := rank.Fixed{1: {2, 0}, 2: {1, 1, 2, 3}}
	rep, err := EvaluateSplit(context.Background(), d, d.Splits["test"], rankings, []int{1, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		group string
		k     int
		want  float64
	}{
		{"seen", 1, 50},    // (q2,1) hit at rank 1; (q1,0) at rank 2: 1/2
		{"seen", 3, 100},   // both: 2/2
		{"unseen", 3, 0},   // tool 3 at rank 4: 0/1
		{"unseen", 4, 100}, // 1/1
	} {
		if got := rep.ToolRecall[tc.group].Recall[tc.k]; got != tc.want {
			t.Errorf("%s R@%d = %v, want %v", tc.group, tc.k, got, tc.want)
		}
	}
	if !strings.Contains(rep.String(), "unseen") {
		t.Errorf("table lacks tool-level rows:\n%s", rep)
	}
}

func TestEvaluateSplitSubsets(t *testing.T) {
	d := tinyDataset()
	rankings := rank.Fixed{1: {0, 1, 2, 3}, 2: {1, 0, 2, 3}}
	rep, err := EvaluateSplit(context.Background(), d, d.Splits["test"], rankings, []int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	// Query 2 needs tool 3, never seen in train: unseen subset. Query 1 only uses tool 0: seen.
	if rep.Subsets["unseen-tools"].N != 1 || rep.Subsets["seen-tools"].N != 1 {
		t.Fatalf("subsets %+v", rep.Subsets)
	}
	if rep.Subsets["relevant=2"].Recall[2] != 50 {
		t.Fatalf("relevant=2 R@2 = %v, want 50", rep.Subsets["relevant=2"].Recall[2])
	}
	// Tool level: train uses tools {0,1}. Seen pairs (q1,0) at rank 1 and (q2,1) at rank 1:
	// R@1 = 2/2 = 100%. Unseen pair (q2,3) is at rank 4: R@1 = R@2 = 0/1.
	tr := rep.ToolRecall
	if tr["seen"].Pairs != 2 || tr["seen"].Recall[1] != 100 || tr["unseen"].Pairs != 1 || tr["unseen"].Recall[2] != 0 {
		t.Fatalf("tool recall %+v", tr)
	}
	b, _ := json.Marshal(rep)
	for _, want := range []string{`"recall@1":`, `"subsets":`, `"split":"test"`, `"tool_recall":{"seen":{"pairs":2,"recall@1":100`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("json %s lacks %s", b, want)
		}
	}
	if !strings.Contains(rep.String(), "unseen-tools") {
		t.Errorf("table lacks subsets:\n%s", rep)
	}
}

// wordRanker ranks by a fixed table and counts a query's tokens as its words plus [CLS] and
// [SEP], with a budget of limit tokens.
type wordRanker struct {
	fixed rank.Fixed
	limit int
}

func (w wordRanker) RankQueries(ctx context.Context, qs []rank.Query, k int) ([]rank.Ranking, error) {
	return w.fixed.RankQueries(ctx, qs, k)
}

func (w wordRanker) QueryTokens(text string) (n, limit int) {
	return len(strings.Fields(text)) + 2, w.limit
}

func TestEvaluateSplitTruncatedQueries(t *testing.T) {
	d := tinyDataset()
	d.Queries[1].Text = "weather in paris"                        // 5 tokens
	d.Queries[2].Text = "book a flight and check the weather too" // 10 tokens
	fixed := rank.Fixed{1: {0, 1, 2, 3}, 2: {0, 2, 1, 3}}
	for _, tc := range []struct {
		name   string
		r      rank.QueryRanker
		groups map[string]int // subset -> queries; absent: no such subset
	}{
		{"budget 8: one truncated", wordRanker{fixed, 8}, map[string]int{"query<=8 tokens": 1, "query>8 tokens": 1}},
		{"budget 10: none truncated", wordRanker{fixed, 10}, map[string]int{"query<=10 tokens": 2}},
		{"no budget", wordRanker{fixed, 0}, map[string]int{}},
		{"ranker without counts", fixed, map[string]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := EvaluateSplit(context.Background(), d, d.Splits["test"], tc.r, []int{1, 2})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for name, res := range rep.Subsets {
				if strings.HasPrefix(name, "query") {
					got[name] = res.N
				}
			}
			if len(got) != len(tc.groups) {
				t.Fatalf("query-length subsets %v, want %v", got, tc.groups)
			}
			for name, n := range tc.groups {
				if got[name] != n {
					t.Errorf("%s: %d queries, want %d", name, got[name], n)
				}
			}
		})
	}
	// The truncated query (2: relevant {1, 3}, ranked 0, 2, 1, 3) finds none of its tools at 2;
	// the short one (1: relevant {0}) finds its tool at 1.
	rep, err := EvaluateSplit(context.Background(), d, d.Splits["test"], wordRanker{fixed, 8}, []int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Subsets["query>8 tokens"].Recall[2]; r != 0 {
		t.Errorf("truncated R@2 = %v, want 0", r)
	}
	if r := rep.Subsets["query<=8 tokens"].Recall[1]; r != 100 {
		t.Errorf("within budget R@1 = %v, want 100", r)
	}
}

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

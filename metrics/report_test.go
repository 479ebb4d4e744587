package metrics

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/retrieve"
)

func tinyDataset() *data.Dataset {
	d := &data.Dataset{Name: "tiny", Tools: make([]data.Tool, 4), Queries: make([]data.Query, 3)}
	d.Splits = map[string]*data.Split{
		"train": {Name: "train", Queries: []int{0}, Relevant: map[int][]int{0: {0, 1}}},
		"test":  {Name: "test", Queries: []int{1, 2}, Relevant: map[int][]int{1: {0}, 2: {1, 3}}},
	}
	return d
}

func TestEvaluateSplitSubsets(t *testing.T) {
	d := tinyDataset()
	rankings := []retrieve.Ranking{{Tools: []int{0, 1, 2, 3}}, {Tools: []int{1, 0, 2, 3}}}
	rep, err := EvaluateSplit(d, "test", rankings, []int{1, 2})
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
	b, _ := json.Marshal(rep)
	for _, want := range []string{`"recall@1":`, `"subsets":`, `"split":"test"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("json %s lacks %s", b, want)
		}
	}
	if !strings.Contains(rep.String(), "unseen-tools") {
		t.Errorf("table lacks subsets:\n%s", rep)
	}
	if _, err := EvaluateSplit(d, "test", rankings[:1], nil); err == nil {
		t.Error("want error for a missing ranking")
	}
	if _, err := EvaluateSplit(d, "dev", rankings, nil); err == nil || !strings.Contains(err.Error(), "have test, train") {
		t.Errorf("want unknown-split error listing splits, got %v", err)
	}
}

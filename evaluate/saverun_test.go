package evaluate

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/rank"
)

func TestRoundPath(t *testing.T) {
	for in, want := range map[string]string{"runs/x.trec": "runs/x.round2.trec", "x": "x.round2", "a.b/x": "a.b/x.round2"} {
		if got := RoundPath(in, 2); got != want {
			t.Errorf("RoundPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRunResults: scores in non-increasing order are kept; missing, unordered or infinite
// ones become n, n-1, ..., 1 and are counted; k truncates.
func TestRunResults(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	qs := []rank.Query{{Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}}
	inf := float32(math.Inf(1))
	rk := []rank.Ranking{
		{Tools: []int{2, 0, 1}, Scores: []float32{3, 2, 2}},
		{Tools: []int{0, 1}},
		{Tools: []int{1, 0}, Scores: []float32{1, 2}},
		{Tools: []int{1, 0}, Scores: []float32{inf, 2}},
	}
	res, rankScores := RunResults(d, qs, rk, 2)
	if rankScores != 3 {
		t.Errorf("%d rankings with rank scores, want 3", rankScores)
	}
	want := []fusion.Result{
		{Query: d.Queries[0].ID, Docs: []string{d.Tools[2].ID, d.Tools[0].ID}, Scores: []float32{3, 2}},
		{Query: d.Queries[1].ID, Docs: []string{d.Tools[0].ID, d.Tools[1].ID}, Scores: []float32{2, 1}},
		{Query: d.Queries[2].ID, Docs: []string{d.Tools[1].ID, d.Tools[0].ID}, Scores: []float32{2, 1}},
		{Query: d.Queries[3].ID, Docs: []string{d.Tools[1].ID, d.Tools[0].ID}, Scores: []float32{2, 1}},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("results\n got %+v\nwant %+v", res, want)
	}
}

// TestRecorder: the recorder asks for at least K tools, returns them, and saves the top K
// of each query, readable as a run of the dataset.
func TestRecorder(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	f := rank.Fixed{0: {3, 2, 1, 0}, 1: {0, 1, 2, 3}}
	rec := &Recorder{QueryRanker: f, K: 3}
	rk, err := rec.RankQueries(context.Background(), []rank.Query{{Index: 0}, {Index: 1}}, 1)
	if err != nil || len(rk[0].Tools) != 3 {
		t.Fatalf("rankings %v (%v), want 3 tools each", rk, err)
	}
	path := filepath.Join(t.TempDir(), "x.run")
	var log strings.Builder
	if err := rec.Save(d, path, "tag", &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "2 of 2 rankings have no scores") || !strings.Contains(log.String(), "wrote 2 rankings (top 3)") {
		t.Errorf("log %q", log.String())
	}
	in, err := fusion.ReadInput(path, d)
	if err != nil {
		t.Fatal(err)
	}
	if got := in.Saved[0].Tools; !reflect.DeepEqual(got, []int{3, 2, 1}) {
		t.Errorf("saved ranking of query 0: %v", got)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

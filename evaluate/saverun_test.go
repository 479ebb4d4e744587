package evaluate

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/fusion"
	"github.com/toolret/toolret/internal/datatest"
	"github.com/toolret/toolret/internal/ranktest"
	"github.com/toolret/toolret/metrics"
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

// TestRecorderWithinLibraries: on a multi-source dataset, recording a ranker that ranks within
// libraries changes nothing the evaluation measures: the recorder asks it for the top K (not
// for every tool, which would rank otherwise), keeps its token counts, and the report is the
// one without the recorder.
func TestRecorderWithinLibraries(t *testing.T) {
	t.Setenv(data.DatasetPathEnv, datatest.Mix(t))
	d, err := data.OpenSources("lens,mix")
	if err != nil {
		t.Fatal(err)
	}
	s := d.Splits["train"]
	plain := &ranktest.Library{D: d, AllReversed: true}
	want, err := metrics.EvaluateSplit(context.Background(), d, s, plain, []int{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	f := &ranktest.Library{D: d, AllReversed: true}
	rec := &Recorder{QueryRanker: metrics.WithinLibraries(d, nil, f), K: 4}
	r := rec.Ranker()
	if _, ok := r.(metrics.LibraryRanker); !ok {
		t.Errorf("Ranker() is a %T, not a metrics.LibraryRanker", r)
	}
	if _, ok := r.(rank.QueryTokenizer); !ok {
		t.Errorf("Ranker() is a %T, not a rank.QueryTokenizer", r)
	}
	got, err := metrics.EvaluateSplit(context.Background(), d, s, r, []int{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Asks, []int{4}) {
		t.Errorf("the recorded ranker was asked for %v tools, want [4]", f.Asks)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("report with the recorder\n%v\nwithout\n%v", got, want)
	}
	if len(rec.rk) != len(s.Judged()) || len(rec.rk[0].Tools) > 4 {
		t.Errorf("recorded %d rankings (first %v), want %d of at most 4 tools", len(rec.rk), rec.rk[0].Tools, len(s.Judged()))
	}
	if _, ok := (&Recorder{QueryRanker: rank.Fixed{}}).Ranker().(metrics.LibraryRanker); ok {
		t.Error("a recorder of a plain ranker claims to rank within libraries")
	}
}

package evaluate

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/rank"
)

// writeCollection writes a collection of split s of d as train feedback leaves one: every
// other judged query refined once ("refined <id>"), the others stopped at round 0.
func writeCollection(t *testing.T, d *data.Dataset, s *data.Split, fingerprint string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fb.jsonl")
	h := feedback.Header{Format: feedback.Format, Dataset: d.Name, Fingerprint: fingerprint, Splits: []string{s.Name}, K: 5, Iterations: 2,
		Settings: map[string]string{"refiner": "fake"}}
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+feedback.ConfigSuffix, hb, 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	for i, q := range s.Judged() {
		id, text := d.Queries[q].ID, d.Queries[q].Text
		if i%2 == 0 {
			enc.Encode(feedback.Line{QueryID: id, Split: s.Name, Iteration: 0, Query: text, Refined: "refined " + id})
			enc.Encode(feedback.Line{QueryID: id, Split: s.Name, Iteration: 1, Query: "refined " + id, Stop: true, Reason: "done"})
		} else {
			enc.Encode(feedback.Line{QueryID: id, Split: s.Name, Iteration: 0, Query: text, Stop: true, Reason: "done"})
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReplay replays a collection with a ranker that finds the relevant tools of refined
// instructions only: round 0 finds nothing, round 1 the refined half, and a query stopped
// at round 0 keeps its ranking in round 1.
func TestReplay(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	s := d.Splits["test"]
	judged := s.Judged()
	rankFn := func(_ context.Context, q int, text string, k int) (rank.Ranking, error) {
		if strings.HasPrefix(text, "refined ") {
			return rank.Ranking{Tools: s.Relevant[q]}, nil
		}
		var out []int
		for t := 0; len(out) < k && t < len(d.Tools); t++ {
			if !slices.Contains(s.Relevant[q], t) {
				out = append(out, t)
			}
		}
		return rank.Ranking{Tools: out}, nil
	}
	path := writeCollection(t, d, s, d.Fingerprint())
	r, err := Replay(context.Background(), d, s, rankFn, ReplayOptions{File: path, Iterations: 1, Depth: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stats) != 2 || !strings.Contains(r.Head, "refiner fake, T = 1") {
		t.Fatalf("%d rounds, head %q", len(r.Stats), r.Head)
	}
	half := (len(judged) + 1) / 2
	if st := r.Stats[0]; st.Active != len(judged) || st.Refined != half {
		t.Errorf("round 0: active %d refined %d, want %d and %d", st.Active, st.Refined, len(judged), half)
	}
	if st := r.Stats[1]; st.Active != half || st.Refined != 0 {
		t.Errorf("round 1: active %d refined %d, want %d and 0", st.Active, st.Refined, half)
	}
	full, err := r.Evaluate(context.Background(), d, s, []int{10})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Stats[0].Metrics.Recall[10]; got != 0 {
		t.Errorf("round 0 recall@10 %v, want 0", got)
	}
	if got, want := r.Stats[1].Metrics.Recall[10], 100*float64(half)/float64(len(judged)); math.Abs(got-want) > 0.01 {
		t.Errorf("round 1 recall@10 %v, want %v", got, want)
	}
	if !slices.Equal(full[1][1].Tools, full[0][1].Tools) || r.Rankings[1][1].Tools != nil {
		t.Errorf("a query stopped at round 0 does not keep its ranking in round 1")
	}

	other := writeCollection(t, d, s, "elsewhere")
	for _, tc := range []struct {
		o    ReplayOptions
		want string
	}{
		{ReplayOptions{File: other, Name: "-feedback x"}, "-feedback x: collected on other data"},
		{ReplayOptions{File: path, Iterations: 3}, "the collection has 2"},
		{ReplayOptions{File: path, Split: "train"}, "has no recorded loop"},
	} {
		if _, err := Replay(context.Background(), d, s, rankFn, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestRankOne(t *testing.T) {
	rankFn := RankOne(rank.Fixed{4: {1, 2, 3}})
	r, err := rankFn(context.Background(), 4, "q", 2)
	if err != nil || !slices.Equal(r.Tools, []int{1, 2}) {
		t.Errorf("RankOne: %v, %v", r, err)
	}
	if _, err := rankFn(context.Background(), 5, "q", 2); err == nil {
		t.Error("RankOne: no error for a query without a ranking")
	}
}

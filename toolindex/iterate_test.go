package toolindex_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/toolindex"
)

// scripted is a refiner that answers by iteration from a script; it records its inputs.
type scripted struct {
	answer func(in feedback.Input) (feedback.Step, error)
	mu     sync.Mutex
	inputs []feedback.Input
}

func (s *scripted) Rewrite(_ context.Context, in feedback.Input) (feedback.Step, error) {
	s.mu.Lock()
	s.inputs = append(s.inputs, in)
	s.mu.Unlock()
	return s.answer(in)
}

func TestIterate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := tinyIndex(dir); err != nil {
		t.Fatal(err)
	}
	r, err := toolindex.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	const q = "what is the weather like in Lisbon tomorrow?"
	more := func(in feedback.Input) (feedback.Step, error) {
		return feedback.Step{Refined: fmt.Sprintf("%s then send it by email (%d)", in.Original, in.Iteration)}, nil
	}
	boom := errors.New("boom")
	for _, c := range []struct {
		name      string
		answer    func(feedback.Input) (feedback.Step, error)
		max       int
		opts      []toolindex.IterateOption
		rounds    int    // rounds returned
		reason    string // the last round's
		err       string // Iterate's error
		refinerIn int    // refiner calls
	}{
		{name: "N/A at round 1", answer: func(in feedback.Input) (feedback.Step, error) {
			if in.Iteration == 1 {
				return feedback.Step{Stop: true}, nil
			}
			return more(in)
		}, max: 3, rounds: 2, reason: feedback.ReasonNA, refinerIn: 2},
		{name: "max rounds", answer: more, max: 2, rounds: 3, reason: feedback.ReasonIterations, refinerIn: 2},
		{name: "max rounds, marked, deeper", answer: more, max: 2, rounds: 3, reason: feedback.ReasonIterations, refinerIn: 2,
			opts: []toolindex.IterateOption{toolindex.WithMarker("Iteration %d: "), toolindex.WithFeedbackK(3), toolindex.WithDepth(7)}},
		{name: "no refinement", answer: more, max: 0, rounds: 1, reason: feedback.ReasonIterations},
		{name: "unchanged", answer: func(in feedback.Input) (feedback.Step, error) {
			return feedback.Step{Refined: " " + strings.ToUpper(in.Query)}, nil
		}, max: 3, rounds: 1, reason: feedback.ReasonUnchanged, refinerIn: 1},
		{name: "failed step", answer: func(feedback.Input) (feedback.Step, error) { return feedback.Step{Err: "malformed"}, nil },
			max: 3, rounds: 1, reason: feedback.ReasonError, refinerIn: 1},
		{name: "empty instruction", answer: func(feedback.Input) (feedback.Step, error) { return feedback.Step{Refined: "  "}, nil },
			max: 3, rounds: 1, reason: feedback.ReasonError, refinerIn: 1},
		{name: "refiner error", answer: func(feedback.Input) (feedback.Step, error) { return feedback.Step{}, boom },
			max: 3, err: "boom", refinerIn: 1},
		{name: "bad marker", answer: more, max: 3, opts: []toolindex.IterateOption{toolindex.WithMarker("Iteration %s")}, err: "marker"},
		{name: "negative rounds", answer: more, max: -1, err: "max rounds -1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := &scripted{answer: c.answer}
			rounds, err := r.Iterate(context.Background(), q, ref, c.max, c.opts...)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				if len(ref.inputs) != c.refinerIn {
					t.Errorf("%d refiner calls, want %d", len(ref.inputs), c.refinerIn)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rounds) != c.rounds || rounds[len(rounds)-1].Reason != c.reason || !rounds[len(rounds)-1].Stop || len(ref.inputs) != c.refinerIn {
				t.Fatalf("%d rounds, last %+v, %d refiner calls; want %d rounds ending %q, %d calls", len(rounds), rounds[len(rounds)-1], len(ref.inputs), c.rounds, c.reason, c.refinerIn)
			}
			k, depth, marker := 10, 10, ""
			if len(c.opts) > 0 {
				k, depth, marker = 3, 7, "Iteration %d: "
			}
			text := q
			for i, rd := range rounds {
				if rd.Iteration != i || rd.Query != text {
					t.Fatalf("round %d: iteration %d, query %q; want %q", i, rd.Iteration, rd.Query, text)
				}
				want := text
				if marker != "" {
					want = fmt.Sprintf(marker, i) + text
				}
				if rd.Text != want {
					t.Errorf("round %d: retrieved with %q, want %q", i, rd.Text, want)
				}
				res, err := r.Retrieve(context.Background(), want, depth)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(ids(rd.Results), ids(res)) || len(rd.Ranking.Tools) != depth || rd.Ranking.Tools[0] != res[0].Index {
					t.Errorf("round %d: results %v, ranking %v; Retrieve(%q) gives %v", i, ids(rd.Results), rd.Ranking.Tools, want, ids(res))
				}
				if i < len(ref.inputs) {
					in := ref.inputs[i]
					var shown []string
					for _, tl := range in.Tools {
						shown = append(shown, tl.ID)
						if tl.Name == "" && tl.API == "" {
							t.Errorf("round %d: tool %s shown without names", i, tl.ID)
						}
					}
					if in.Original != q || in.Query != text || in.Iteration != i || !slices.Equal(shown, ids(res)[:k]) {
						t.Errorf("round %d: refiner input %+v; want q^0, q^t, the top %d %v", i, in, k, ids(res)[:k])
					}
				}
				if rd.Stop != (i == len(rounds)-1) || (!rd.Stop && rd.Refined == "") {
					t.Errorf("round %d: stop %v, refined %q", i, rd.Stop, rd.Refined)
				}
				text = rd.Refined
			}
		})
	}
}

// TestIterateMarkedIndex: the index of an iteration-aware bi-encoder records its marker;
// Retrieve embeds a query as round 0's instruction and Iterate marks each round, while the
// refiner sees the instructions themselves; WithMarker("") turns the marking off.
func TestIterateMarkedIndex(t *testing.T) {
	const marker = "Iteration %d: "
	plainDir := filepath.Join(t.TempDir(), "plain")
	m, err := tinyIndex(plainDir)
	if err != nil {
		t.Fatal(err)
	}
	m.Marker = marker
	markedDir := filepath.Join(t.TempDir(), "marked")
	if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: markedDir}); err != nil {
		t.Fatal(err)
	}
	plain, err := toolindex.Load(plainDir)
	if err != nil {
		t.Fatal(err)
	}
	marked, err := toolindex.Load(markedDir)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Marker() != "" || marked.Marker() != marker || marked.Manifest().Marker != marker {
		t.Fatalf("markers: plain %q, marked %q (manifest %q); want \"\" and %q", plain.Marker(), marked.Marker(), marked.Manifest().Marker, marker)
	}
	ctx := context.Background()
	const q = "what is the weather like in Lisbon tomorrow?"
	same := func(what string, got, want []toolindex.Result) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
		}
		for i := range got {
			if got[i].ToolID != want[i].ToolID || got[i].Score != want[i].Score {
				t.Fatalf("%s: result %d is %s (%v), want %s (%v)", what, i, got[i].ToolID, got[i].Score, want[i].ToolID, want[i].Score)
			}
		}
	}
	got, err := marked.Retrieve(ctx, q, 10)
	if err != nil {
		t.Fatal(err)
	}
	want, err := plain.Retrieve(ctx, fmt.Sprintf(marker, 0)+q, 10)
	if err != nil {
		t.Fatal(err)
	}
	same("Retrieve", got, want)
	unmarked, err := plain.Retrieve(ctx, q, 10)
	if err != nil {
		t.Fatal(err)
	}
	differ := false
	for i := range got {
		differ = differ || got[i].Score != unmarked[i].Score
	}
	if !differ {
		t.Fatal("the marked query scores like the unmarked one: the marker is not applied")
	}
	more := func(in feedback.Input) (feedback.Step, error) {
		return feedback.Step{Refined: fmt.Sprintf("%s then send it by email (%d)", in.Original, in.Iteration)}, nil
	}
	for _, c := range []struct {
		name   string
		opts   []toolindex.IterateOption
		marker string
	}{
		{"index marker", nil, marker},
		{"WithMarker off", []toolindex.IterateOption{toolindex.WithMarker("")}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := &scripted{answer: more}
			rounds, err := marked.Iterate(ctx, q, ref, 2, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(rounds) != 3 {
				t.Fatalf("%d rounds, want 3", len(rounds))
			}
			for i, rd := range rounds {
				text := rd.Query
				if c.marker != "" {
					text = fmt.Sprintf(c.marker, i) + rd.Query
				}
				if rd.Text != text {
					t.Errorf("round %d retrieved with %q, want %q", i, rd.Text, text)
				}
				want, err := plain.Retrieve(ctx, text, 10)
				if err != nil {
					t.Fatal(err)
				}
				same(fmt.Sprintf("round %d", i), rd.Results, want)
				if i < len(ref.inputs) && ref.inputs[i].Query != rd.Query {
					t.Errorf("round %d: the refiner got %q, want the instruction %q", i, ref.inputs[i].Query, rd.Query)
				}
			}
		})
	}
}

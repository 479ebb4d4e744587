package rerank

import (
	"context"
	"reflect"
	"testing"
)

// fixedScorer returns a fixed score per API.
type fixedScorer struct {
	scores map[int]float32
	calls  [][]int
}

func (f *fixedScorer) Score(_ context.Context, _ string, apis []int) ([]float32, error) {
	f.calls = append(f.calls, append([]int(nil), apis...))
	out := make([]float32, len(apis))
	for i, a := range apis {
		out[i] = f.scores[a]
	}
	return out, nil
}

func apis(c []Candidate) []int {
	out := make([]int, len(c))
	for i, x := range c {
		out[i] = x.API
	}
	return out
}

// Library used by the tests: tool 0 = APIs {0,1,2}, tool 1 = {3,4}, tool 2 = {5,6,7} (unseen),
// tool 3 = {8}.
func testLib(t *testing.T) *Library {
	lib, err := NewLibrary(
		[]int{0, 0, 0, 1, 1, 2, 2, 2, 3},
		[]bool{true, true, true, true, true, false, false, false, true})
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

func TestTruncate(t *testing.T) {
	seen := []bool{true, true, true, true, true, false, false, false, true}
	for _, tc := range []struct {
		name   string
		ranked []int
		ms, mu int
		want   []int
	}{
		// Positions: 0@1 1@2 5@3 3@4 6@5. ms=2 keeps seen at positions <= 2; mu=5 keeps unseen <= 5.
		{"adaptive", []int{0, 1, 5, 3, 6}, 2, 5, []int{0, 1, 5, 6}},
		{"all seen within ms", []int{0, 1}, 3, 5, []int{0, 1}},
		{"unseen beyond mu", []int{0, 1, 3, 4, 5}, 2, 4, []int{0, 1}},
		{"empty", nil, 10, 30, []int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Truncate(tc.ranked, seen, tc.ms, tc.mu); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Truncate = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRerankTiesKeepOrder(t *testing.T) {
	s := &fixedScorer{scores: map[int]float32{0: 0.5, 1: 0.9, 2: 0.5}}
	got, err := Rerank(context.Background(), s, "q", []int{2, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 0}; !reflect.DeepEqual(apis(got), want) {
		t.Fatalf("Rerank = %v, want %v", apis(got), want)
	}
}

func TestSingleTool(t *testing.T) {
	lib := testLib(t)
	ctx := context.Background()
	t.Run("seen tool: F1 first, no second pass", func(t *testing.T) {
		s := &fixedScorer{}
		res := []Candidate{{3, 0.95}, {0, 0.7}, {4, 0.65}, {8, 0.2}}
		got, err := SingleTool(ctx, s, lib, "q", res, 0.8)
		if err != nil {
			t.Fatal(err)
		}
		// X = {tool 1} (only API 3 scores > 0.8): F1 = [3, 4], F2 = [0, 8].
		if want := []int{3, 4, 0, 8}; !reflect.DeepEqual(apis(got), want) {
			t.Fatalf("got %v, want %v", apis(got), want)
		}
		if len(s.calls) != 0 {
			t.Fatalf("seen tool must not trigger reranking, got calls %v", s.calls)
		}
	})
	t.Run("empty X falls back to the top result's tool", func(t *testing.T) {
		res := []Candidate{{0, 0.4}, {3, 0.35}, {1, 0.3}}
		got, err := SingleTool(ctx, &fixedScorer{}, lib, "q", res, 0.8)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{0, 1, 3}; !reflect.DeepEqual(apis(got), want) {
			t.Fatalf("got %v, want %v", apis(got), want)
		}
	})
	t.Run("unseen tool pulls in APIs outside the truncated list", func(t *testing.T) {
		// Only API 5 of unseen tool 2 survived truncation; 6 and 7 must be added and F1 reranked.
		s := &fixedScorer{scores: map[int]float32{5: 0.85, 6: 0.9, 7: 0.1, 3: 0.95}}
		res := []Candidate{{3, 0.95}, {5, 0.85}, {0, 0.3}}
		got, err := SingleTool(ctx, s, lib, "q", res, 0.8)
		if err != nil {
			t.Fatal(err)
		}
		// X = {tool 1, tool 2}; F1 = [3, 5] + {6, 7}; reranked: 3 (.95), 6 (.9), 5 (.85), 7 (.1); F2 = [0].
		if want := []int{3, 6, 5, 7, 0}; !reflect.DeepEqual(apis(got), want) {
			t.Fatalf("got %v, want %v", apis(got), want)
		}
		if len(s.calls) != 1 || !reflect.DeepEqual(s.calls[0], []int{3, 5, 6, 7}) {
			t.Fatalf("scorer calls %v", s.calls)
		}
	})
	t.Run("empty results", func(t *testing.T) {
		got, err := SingleTool(ctx, &fixedScorer{}, lib, "q", nil, 0.8)
		if err != nil || len(got) != 0 {
			t.Fatalf("got %v, %v", got, err)
		}
	})
}

func TestMultiTool(t *testing.T) {
	lib := testLib(t)
	res := []Candidate{{0, 0.9}, {1, 0.85}, {2, 0.8}, {3, 0.7}, {8, 0.6}, {4, 0.5}}
	t.Run("component larger than n", func(t *testing.T) {
		// Components by tool: {0,1,2} (tool 0), {3,4} (tool 1), {8}. n = 2 keeps 0,1 from tool 0
		// and 3,4 from tool 1; API 2 is demoted to F2.
		got := MultiTool(lib, res, nil, 0.8, 2)
		if want := []int{0, 1, 3, 8, 4, 2}; !reflect.DeepEqual(apis(got), want) {
			t.Fatalf("got %v, want %v", apis(got), want)
		}
	})
	t.Run("similarity joins components", func(t *testing.T) {
		// APIs 3 and 8 are similar (> tauM): component {3,4,8}; with n = 1: F1 = [0, 3], F2 = rest.
		sim := func(a, b int) float32 {
			if (a == 3 && b == 8) || (a == 8 && b == 3) {
				return 0.95
			}
			return 0
		}
		got := MultiTool(lib, res, sim, 0.8, 1)
		if want := []int{0, 3, 1, 2, 8, 4}; !reflect.DeepEqual(apis(got), want) {
			t.Fatalf("got %v, want %v", apis(got), want)
		}
	})
	t.Run("ties keep input order", func(t *testing.T) {
		tied := []Candidate{{3, 0.5}, {0, 0.5}, {4, 0.5}}
		got := MultiTool(lib, tied, nil, 0.8, 1)
		if want := []int{3, 0, 4}; !reflect.DeepEqual(apis(got), want) {
			t.Fatalf("got %v, want %v", apis(got), want)
		}
	})
}

func TestNewLibraryErrors(t *testing.T) {
	if _, err := NewLibrary([]int{0}, []bool{true, false}); err == nil {
		t.Fatal("want length mismatch error")
	}
	if _, err := NewLibrary([]int{-1}, []bool{true}); err == nil {
		t.Fatal("want negative index error")
	}
}

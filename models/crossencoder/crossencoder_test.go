package crossencoder

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/tokenize"
)

func TestPairIDsMatchesTokenizer(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, tool := range d.Tools {
		texts = append(texts, tool.Text)
	}
	vocab, err := tokenize.BuildVocab(texts, 800, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		q := d.Queries[r.IntN(len(d.Queries))].Text
		tool := d.Tools[r.IntN(len(d.Tools))].Text
		maxLen := []int{0, 3, 8, 16, 33, 64, 128, 512}[i%8]
		wantIDs, wantTypes := tok.Pair(q, tool, maxLen)
		ids, types := PairIDs(tok, tok.Encode(q), tok.Encode(tool), maxLen)
		if !reflect.DeepEqual(ids, wantIDs) || !reflect.DeepEqual(types, wantTypes) {
			t.Fatalf("maxLen %d: PairIDs %v/%v, tokenizer %v/%v", maxLen, ids, types, wantIDs, wantTypes)
		}
	}
}

func TestSampleNegatives(t *testing.T) {
	pos := func(a int) bool { return a == 1 || a == 4 }
	for _, tc := range []struct {
		name  string
		cands []int
		k     int
		onlyC bool
	}{
		{"enough candidates", []int{1, 2, 3, 4, 5, 6}, 3, true},
		{"candidates exhausted: top up", []int{4, 2}, 3, false},
		{"no candidates", nil, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(20) {
				r := rand.New(rand.NewPCG(seed, 1))
				got, err := SampleNegatives(r, tc.cands, pos, 10, tc.k)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != tc.k {
					t.Fatalf("%d negatives, want %d", len(got), tc.k)
				}
				seen := map[int]bool{}
				for _, a := range got {
					if pos(a) || seen[a] || a < 0 || a >= 10 {
						t.Fatalf("negatives %v: positive, repeated or out of range", got)
					}
					seen[a] = true
					if tc.onlyC && !slices.Contains(tc.cands, a) {
						t.Fatalf("negatives %v: %d is not a retriever candidate", got, a)
					}
				}
				if !tc.onlyC && len(tc.cands) > 0 && !seen[2] {
					t.Fatalf("negatives %v must use the non-positive candidate 2 first", got)
				}
			}
		})
	}
}

// TestSampleNegativesFew checks a query relevant to all but a few APIs (the negatives repeat)
// or to every API (an error), without hanging or panicking.
func TestSampleNegativesFew(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nTools int
		neg    []int // the only non-positive APIs
		cands  []int
		k      int
	}{
		{"one non-positive, candidates all positive", 1000, []int{517}, []int{1, 2, 3}, 3},
		{"two non-positives, not in candidates", 50, []int{0, 49}, []int{7}, 5},
		{"every API positive", 1000, nil, []int{1, 2}, 3},
		{"every API positive, no candidates", 8, nil, nil, 2},
		{"empty library", 0, nil, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pos := func(a int) bool { return !slices.Contains(tc.neg, a) }
			type result struct {
				negs []int
				err  error
			}
			done := make(chan result, 1)
			go func() {
				negs, err := SampleNegatives(rand.New(rand.NewPCG(3, 4)), tc.cands, pos, tc.nTools, tc.k)
				done <- result{negs, err}
			}()
			var res result
			select {
			case res = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("SampleNegatives did not return within 10s")
			}
			if len(tc.neg) == 0 {
				if res.err == nil || !strings.Contains(res.err.Error(), "relevant to all") {
					t.Fatalf("negatives %v, err %v: want an error naming the cause", res.negs, res.err)
				}
				return
			}
			if res.err != nil {
				t.Fatal(res.err)
			}
			if len(res.negs) != tc.k {
				t.Fatalf("%d negatives %v, want %d", len(res.negs), res.negs, tc.k)
			}
			seen := map[int]bool{}
			for _, a := range res.negs {
				if !slices.Contains(tc.neg, a) {
					t.Fatalf("negatives %v: %d is a positive", res.negs, a)
				}
				seen[a] = true
			}
			if len(seen) != len(tc.neg) {
				t.Fatalf("negatives %v use %d of the %d non-positive APIs", res.negs, len(seen), len(tc.neg))
			}
		})
	}
}

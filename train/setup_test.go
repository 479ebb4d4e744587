package train

import (
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/tokenize"
)

func TestSetup(t *testing.T) {
	vocab, err := tokenize.BuildVocab([]string{"alpha beta gamma"}, 100, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	d := &data.Dataset{Queries: []data.Query{{ID: "q0", Text: "alpha"}, {ID: "q1", Text: "beta gamma"}, {ID: "q2", Text: "gamma"}}}
	s := &Setup{Data: d, Tok: tok, Seed: 4, ExtraFiles: map[string][]byte{"f": []byte("x")},
		Train: &data.Split{Name: "train", Queries: []int{2, 0, 1}, Relevant: map[int][]int{2: {5}, 1: {3, 4}}}}
	if got, want := s.TrainPairs(), []Pair{{2, 5}, {1, 3}, {1, 4}}; !reflect.DeepEqual(got, want) {
		t.Errorf("TrainPairs %v, want %v", got, want)
	}
	if f, err := s.Files(); err != nil || string(f["f"]) != "x" {
		t.Errorf("Files %v, %v", f, err)
	}
	seqs := s.QuerySeqs([]int{1, 2}, 3)
	if len(seqs) != 2 || !reflect.DeepEqual(seqs[1], tok.Single("beta gamma", 3)) || !reflect.DeepEqual(seqs[2], tok.Single("gamma", 3)) {
		t.Errorf("QuerySeqs %v", seqs)
	}
	o, err := s.JudgedOrder("kind", 9)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.Items, []int{2, 1}) || o.Seed != 4 || o.Salt != 9 {
		t.Errorf("JudgedOrder %+v, want items [2 1], seed 4, salt 9", o)
	}
	for _, c := range []struct{ size, want int }{{1, 2}, {2, 1}, {3, 1}} {
		if got := o.FullBatches(c.size); got != c.want {
			t.Errorf("FullBatches(%d) = %d, want %d", c.size, got, c.want)
		}
	}
	s.Train = &data.Split{Name: "empty", Queries: []int{0}}
	if _, err := s.JudgedOrder("kind", 9); err == nil || !strings.Contains(err.Error(), "kind: split empty has no judged queries") {
		t.Errorf("JudgedOrder of a split without qrels: %v", err)
	}
}

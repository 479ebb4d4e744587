package biencoder

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/tokenize"
)

// tinyTask returns a prepared task over 4 tools whose query "all" is relevant to every tool
// and has no mined negatives; query "some" is relevant to tools 0-2 and has none either;
// queries "mined*" have mined lists.
func tinyTask(t *testing.T) *Task {
	t.Helper()
	texts := []string{"get the weather", "send an email", "book a flight", "play some music"}
	d := &data.Dataset{Name: "tiny"}
	for i, s := range texts {
		d.Tools = append(d.Tools, data.Tool{ID: string(rune('a' + i)), Text: s})
	}
	d.Queries = []data.Query{{ID: "all", Text: "do everything"}, {ID: "some", Text: "weather email flight"}}
	tr := &data.Split{Name: "train", Queries: []int{0, 1}, Relevant: map[int][]int{0: {0, 1, 2, 3}, 1: {0, 1, 2}}}
	mined := map[int][]int{}
	for i := range 6 {
		q := len(d.Queries)
		d.Queries = append(d.Queries, data.Query{ID: "mined" + string(rune('0'+i)), Text: "weather please"})
		tr.Queries, tr.Relevant[q], mined[q] = append(tr.Queries, q), []int{i % 4}, []int{(i + 1) % 4}
	}
	vocab, err := tokenize.BuildVocab(append(texts, "do everything weather email flight please"), 100, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := encoder.New("bert", encoder.Sizes{Vocab: tok.VocabSize(), Layers: 1, Hidden: 8, Heads: 2, Intermediate: 16, MaxPositions: 16})
	if err != nil {
		t.Fatal(err)
	}
	task := &Task{
		Cfg:  &Config{Encoder: bc, Pooling: encoder.PoolMean, Shared: true, QueryMaxLen: 8, ToolMaxLen: 8, Similarity: "cosine", Temperature: 0.05},
		Data: d, Train: tr, Tok: tok, BatchSize: 2, Seed: 1,
		HardNegatives: 2, Negatives: mined,
	}
	if err := task.Prepare(); err != nil {
		t.Fatal(err)
	}
	return task
}

// within fails the test when f does not return within 10s.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("did not return within 10s")
	}
}

func TestRandomNegative(t *testing.T) {
	task := tinyTask(t)
	r := rand.New(rand.NewPCG(1, 2))
	within(t, func() {
		for range 20 {
			if n, err := task.randomNegative(r, 1); err != nil || n != 3 {
				t.Fatalf("query relevant to tools 0-2: negative %d, %v; want 3", n, err)
			}
		}
		if n, err := task.randomNegative(r, 0); err == nil || !strings.Contains(err.Error(), `"all" is relevant to all 4 tools`) {
			t.Fatalf("query relevant to every tool: negative %d, err %v; want an error", n, err)
		}
	})
}

// TestBatchQueryRelevantToAll checks that a batch holding a query relevant to every tool
// returns an error instead of looping forever, and that the other batches are built.
func TestBatchQueryRelevantToAll(t *testing.T) {
	task := tinyTask(t)
	within(t, func() {
		failed, built := 0, 0
		for i := range task.Batches(0) {
			hasAll := false
			for _, p := range task.batches(0)[i] {
				hasAll = hasAll || p.Query == 0
			}
			_, n, err := task.Batch(0, i)
			switch {
			case hasAll && (err == nil || !strings.Contains(err.Error(), "relevant to all")):
				t.Errorf("batch %d holds query \"all\": err %v, want an error", i, err)
			case hasAll:
				failed++
			case err != nil:
				t.Errorf("batch %d: %v", i, err)
			default:
				built += n
			}
		}
		if failed == 0 || built == 0 {
			t.Errorf("%d batches failed, %d examples built: want both > 0", failed, built)
		}
	})
}

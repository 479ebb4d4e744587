package train

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/tokenize"
)

// Setup is what the tasks that train on a dataset's splits are given besides their model
// configuration and their own knobs; a task embeds it, and its Files method implements
// Task.Files.
type Setup struct {
	Data  *data.Dataset
	Train *data.Split
	Dev   *data.Split // nil: no dev evaluation (Evaluate returns no metrics)
	// Tok tokenizes the texts (nil for a task that tokenizes none).
	Tok       *tokenize.Tokenizer
	Backend   compute.Backend
	BatchSize int
	// Seed makes every batch a pure function of (Seed, epoch, i).
	Seed uint64
	// ExtraFiles are stored with every checkpoint.
	ExtraFiles map[string][]byte
}

// Files implements Task.Files: ExtraFiles.
func (s *Setup) Files() (map[string][]byte, error) { return s.ExtraFiles, nil }

// JudgedOrder returns the judged queries of the Train split in a seeded order per epoch
// (EpochOrder with Seed and the task's salt), or an error naming the task (kind) when the
// split has none.
func (s *Setup) JudgedOrder(kind string, salt uint64) (*EpochOrder, error) {
	qs := s.Train.Judged()
	if len(qs) == 0 {
		return nil, fmt.Errorf("%s: split %s has no judged queries", kind, s.Train.Name)
	}
	return &EpochOrder{Items: qs, Seed: s.Seed, Salt: salt}, nil
}

// TrainPairs returns the (query, relevant tool) pairs of the Train split, in its order.
func (s *Setup) TrainPairs() []Pair {
	var out []Pair
	for _, p := range s.Train.Pairs() {
		out = append(out, Pair{Query: p[0], Tool: p[1]})
	}
	return out
}

// QuerySeqs tokenizes the text of each query of qs (dataset indices) into at most maxLen
// tokens, specials included (tokenize.Tokenizer.Single), keyed by query index.
func (s *Setup) QuerySeqs(qs []int, maxLen int) map[int][]int32 {
	out := make(map[int][]int32, len(qs))
	for _, q := range qs {
		out[q] = s.Tok.Single(s.Data.Queries[q].Text, maxLen)
	}
	return out
}

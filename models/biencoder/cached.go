package biencoder

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/losses"
	"github.com/toolret/toolret/train"
)

// The kinds of rows a cached batch is encoded in (train.Cached): queries (with feedback,
// every instruction row), positive tools, hard negatives.
const (
	kindQueries = iota
	kindTools
	kindNegatives
	numKinds
)

// splitRows cuts a query2tool batch's inputs (query ids and mask, tool ids and mask, the
// false-negative mask, and with hard negatives their ids and mask) into chunks of at most m
// rows of each kind; the false-negative mask is the loss's own input.
func splitRows(m int, in []*tensors.Tensor) ([]train.Chunk, []*tensors.Tensor, error) {
	if len(in) != 5 && len(in) != 7 {
		return nil, nil, fmt.Errorf("biencoder: %d batch inputs, want 5 or 7", len(in))
	}
	var chunks []train.Chunk
	for _, k := range []struct {
		kind     int
		ids, msk int
	}{{kindQueries, 0, 1}, {kindTools, 2, 3}, {kindNegatives, 5, 6}} {
		if k.ids >= len(in) {
			break
		}
		c, err := train.SplitRows(k.kind, m, in[k.ids], in[k.msk])
		if err != nil {
			return nil, nil, fmt.Errorf("biencoder: %w", err)
		}
		chunks = append(chunks, c...)
	}
	return chunks, []*tensors.Tensor{in[4]}, nil
}

// embedKind embeds a chunk's ids and mask with kind's tower, as reg embeds it, and locks
// what reg locks in that tower.
func embedKind(c *Config, reg Regularization, s *model.Scope, kind int, in []*Node) *Node {
	tower := ToolTower
	if kind == kindQueries {
		tower = QueryTower
	}
	e := reg.embed(c, s, tower, in[0], in[1])
	reg.freezeTower(c, s, tower)
	return e
}

// checkMiniBatch validates a mini-batch size for objective.
func checkMiniBatch(m int, objective string) error {
	if m < 0 {
		return fmt.Errorf("biencoder: mini-batch %d: must be >= 0 (0: the whole batch at once)", m)
	}
	if m > 0 && objective == ObjectiveQuery2Query {
		return fmt.Errorf("biencoder: mini-batch %d: the %s objective's triplet loss is not cached (GradCache applies to %s)", m, ObjectiveQuery2Query, ObjectiveQuery2Tool)
	}
	return nil
}

// MiniBatch implements train.Cached: Task.MiniBatchSize.
func (t *Task) MiniBatch() int { return t.MiniBatchSize }

// Kinds implements train.Cached.
func (t *Task) Kinds() int { return numKinds }

// Split implements train.Cached.
func (t *Task) Split(in []*tensors.Tensor) ([]train.Chunk, []*tensors.Tensor, error) {
	return splitRows(t.MiniBatchSize, in)
}

// Embed implements train.Cached.
func (t *Task) Embed(s *model.Scope, kind int, in []*Node) *Node {
	return embedKind(t.Cfg, t.Reg, s, kind, in)
}

// CachedLoss implements train.Cached: Loss's InfoNCE over the embeddings.
func (t *Task) CachedLoss(_ *model.Scope, embs, rest []*Node) *Node {
	return t.Cfg.infoNCE(embs[kindQueries], embs[kindTools], embs[kindNegatives], rest[0])
}

// MiniBatch implements train.Cached: FeedbackTask.MiniBatchSize.
func (t *FeedbackTask) MiniBatch() int { return t.MiniBatchSize }

// Kinds implements train.Cached.
func (t *FeedbackTask) Kinds() int { return numKinds }

// Split implements train.Cached: the instruction rows (Rows per example) are the query
// kind's.
func (t *FeedbackTask) Split(in []*tensors.Tensor) ([]train.Chunk, []*tensors.Tensor, error) {
	return splitRows(t.MiniBatchSize, in)
}

// Embed implements train.Cached.
func (t *FeedbackTask) Embed(s *model.Scope, kind int, in []*Node) *Node {
	return embedKind(t.Cfg, t.Reg, s, kind, in)
}

// CachedLoss implements train.Cached: Loss's weighted sum over the instruction rows.
func (t *FeedbackTask) CachedLoss(_ *model.Scope, embs, rest []*Node) *Node {
	return t.loss(embs[kindQueries], embs[kindTools], embs[kindNegatives], rest[0])
}

var (
	_ train.Cached = (*Task)(nil)
	_ train.Cached = (*FeedbackTask)(nil)
)

// infoNCE is the query2tool loss over embeddings: queries and positives [B, D], hard
// negatives [B*k, D] (nil: none), the false-negative mask [B, B(+B*k)].
func (c *Config) infoNCE(q, t, negs, mask *Node) *Node {
	var neg *Node
	if negs != nil {
		neg = Reshape(negs, q.Shape().Dim(0), -1, negs.Shape().Dim(1))
	}
	sim, _ := losses.ParseSimilarity(c.Similarity)
	return losses.InfoNCE(q, t, neg, mask, losses.InfoNCEConfig{
		Temperature: c.Temperature, Similarity: sim, Symmetric: c.Symmetric, NoMasking: c.NoMasking})
}

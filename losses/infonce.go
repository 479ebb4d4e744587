package losses

import (
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
	"github.com/gomlx/gomlx/support/exceptions"
)

// InfoNCEConfig configures InfoNCE.
type InfoNCEConfig struct {
	// Temperature τ divides the similarities; it must be > 0 (0.05 is usual for cosine).
	Temperature float64
	// Similarity between query and tool embeddings.
	Similarity Similarity
	// Symmetric adds the tool→query term: each in-batch positive tool classifies its query
	// among the batch's queries. The loss is then the mean of both directions.
	Symmetric bool
	// NoMasking ignores the false-negative mask (ablation): every candidate other than the
	// query's own positive counts as a negative.
	NoMasking bool
}

// InfoNCE is the contrastive loss of bi-encoder training with in-batch negatives, explicit
// hard negatives and false-negative masking.
//
// Inputs: queries [B, D], positives [B, D] (positives[i] is a relevant tool of queries[i]),
// hardNegatives [B, k, D] or nil, and isPositive [B, B+B*k] or nil. Query i scores the
// candidate set C = (positives[0..B), hardNegatives flattened to B*k rows) — every query sees
// all candidates of the batch — with logits s(q_i, c_j)/τ, and
//
//	loss_i = -log( exp(l_ii) / Σ_{j ∈ C, keep_ij} exp(l_ij) ),   keep_ij = (j == i) || !isPositive[i][j]
//
// so candidates that are also positives of query i (another pair of the same query, a
// duplicate tool, a "hard negative" that is relevant) are removed from the denominator while
// the diagonal positive stays. isPositive is bool (or numeric, non-zero = true); build it on
// the host with FalseNegativeMask. A nil mask, or cfg.NoMasking, keeps every candidate.
//
// With cfg.Symmetric the tool→query term is added: tool j scores the B queries,
// loss'_j = -log(exp(l_jj) / Σ_{i: i==j || !isPositive[i][j]} exp(l_ji)), and the result is
// (mean_i loss_i + mean_j loss'_j) / 2. Otherwise it is mean_i loss_i.
func InfoNCE(queries, positives, hardNegatives, isPositive *Node, cfg InfoNCEConfig) *Node {
	const fn = "InfoNCE"
	checkRank(fn, "queries", queries, 2)
	checkRank(fn, "positives", positives, 2)
	checkSameShape(fn, "queries", queries, "positives", positives)
	checkTemperature(fn, cfg.Temperature)
	g := queries.Graph()
	b, d := queries.Shape().Dim(0), queries.Shape().Dim(1)
	candidates := positives
	k := 0
	if hardNegatives != nil {
		checkRank(fn, "hardNegatives", hardNegatives, 3)
		dims := hardNegatives.Shape().Dimensions
		if dims[0] != b || dims[2] != d || hardNegatives.DType() != queries.DType() {
			exceptions.Panicf("%s: hardNegatives %s must be [%d, k, %d] %s", fn, hardNegatives.Shape(), b, d, queries.DType())
		}
		k = dims[1]
		if k > 0 {
			candidates = Concatenate([]*Node{positives, Reshape(hardNegatives, b*k, d)}, 0)
		}
	}
	n := b + b*k
	if cfg.NoMasking {
		isPositive = nil
	}
	if isPositive != nil {
		if isPositive.Rank() != 2 || isPositive.Shape().Dim(0) != b || isPositive.Shape().Dim(1) != n {
			exceptions.Panicf("%s: isPositive mask %s must be [%d, %d] (B, B+B*k)", fn, isPositive.Shape(), b, n)
		}
		if isPositive.DType() != dtypes.Bool {
			isPositive = toBool(isPositive)
		}
	}

	logits := DivScalar(Scores(queries, candidates, cfg.Similarity), cfg.Temperature) // [B, N]
	diag := Equal(Iota(g, shapes2(b, n), 0), Iota(g, shapes2(b, n), 1))               // [B, N]
	var keep *Node
	if isPositive != nil {
		keep = LogicalOr(diag, LogicalNot(isPositive))
	}
	loss := diagonalCE(logits, keep, diag)
	if !cfg.Symmetric {
		return loss
	}
	// Tool→query: rows are the B in-batch tools, columns the B queries.
	t2q := Transpose(SliceAxis(logits, 1, AxisRange(0, b)), 0, 1)
	diagB := Diagonal(g, b)
	var keepT *Node
	if isPositive != nil {
		keepT = LogicalOr(diagB, LogicalNot(Transpose(SliceAxis(isPositive, 1, AxisRange(0, b)), 0, 1)))
	}
	return DivScalar(Add(loss, diagonalCE(t2q, keepT, diagB)), 2)
}

// diagonalCE returns mean_i [logsumexp_{j: keep_ij} logits_ij - logits_ii], the cross-entropy
// whose target for row i is column i. diag is the bool [R, C] matrix j == i; keep may be nil
// (keep everything) and must include the diagonal.
func diagonalCE(logits, keep, diag *Node) *Node {
	zero := ScalarZero(logits.Graph(), logits.DType())
	target := ReduceSum(Where(diag, logits, zero), -1)                   // [R]
	lse := Reshape(logSumExpMasked(logits, keep), logits.Shape().Dim(0)) // [R]
	return ReduceAllMean(Sub(lse, target))
}

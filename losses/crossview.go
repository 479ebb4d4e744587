package losses

import (
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // GoMLX idiom.
)

// CrossViewInfoNCE is COLT's cross-view contrastive loss between two views of the same B
// items, a [B, D] and b [B, D] (e.g. a query's embedding from the query-scene graph, e_q^S,
// and from the query-tool graph, e_q^T). Logits are cos(a_i, b_j)/τ with in-batch negatives
// and the diagonal as the positive:
//
//	one-way (as in the COLT paper):  mean_i -log( exp(l_ii) / Σ_j exp(l_ij) )
//	symmetric: the mean of the one-way loss and the same with a and b swapped.
func CrossViewInfoNCE(a, b *Node, temperature float64, symmetric bool) *Node {
	return InfoNCE(a, b, nil, nil, InfoNCEConfig{Temperature: temperature, Similarity: SimCosine, Symmetric: symmetric})
}

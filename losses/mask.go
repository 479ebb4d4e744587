package losses

import "fmt"

// Relevance reports whether tool is a positive of query; both are dense dataset indices
// (data.Dataset.Queries / Tools).
type Relevance func(query, tool int) bool

// RelevanceFromMap returns the Relevance of a map from query to its relevant tools, such as
// data.Split.Relevant. The map is copied into a set, so later changes to it are not seen.
func RelevanceFromMap(rel map[int][]int) Relevance {
	set := make(map[[2]int]struct{})
	for q, tools := range rel {
		for _, t := range tools {
			set[[2]int{q, t}] = struct{}{}
		}
	}
	return func(q, t int) bool {
		_, ok := set[[2]int{q, t}]
		return ok
	}
}

// FalseNegativeMask builds InfoNCE's isPositive mask on the host, shape [B][B+B*k] with
// B = len(queries) and k = len(hardNegatives[i]) (the same for every i; hardNegatives may be
// nil for k = 0).
//
// Candidate j is positives[j] for j < B and hardNegatives[(j-B)/k][(j-B)%k] after that.
// mask[i][j] is true when candidate j is a positive of queries[i]: it is the same tool as
// positives[i] (duplicates in the batch), it is the in-batch positive of the same query
// (queries[j] == queries[i], j < B), or rel(queries[i], tool) holds. rel may be nil, leaving
// only the first two rules. The diagonal is always true.
func FalseNegativeMask(queries, positives []int, hardNegatives [][]int, rel Relevance) ([][]bool, error) {
	b := len(queries)
	if len(positives) != b {
		return nil, fmt.Errorf("false-negative mask: %d queries but %d positives", b, len(positives))
	}
	if hardNegatives != nil && len(hardNegatives) != b {
		return nil, fmt.Errorf("false-negative mask: %d queries but %d hard-negative rows", b, len(hardNegatives))
	}
	k := 0
	if len(hardNegatives) > 0 {
		k = len(hardNegatives[0])
	}
	for i := range b {
		if queries[i] < 0 || positives[i] < 0 {
			return nil, fmt.Errorf("false-negative mask: batch row %d: negative id (query %d, tool %d)", i, queries[i], positives[i])
		}
		if hardNegatives == nil {
			continue
		}
		if len(hardNegatives[i]) != k {
			return nil, fmt.Errorf("false-negative mask: hard-negative row %d has %d tools, row 0 has %d", i, len(hardNegatives[i]), k)
		}
		for h, t := range hardNegatives[i] {
			if t < 0 {
				return nil, fmt.Errorf("false-negative mask: hard negative [%d][%d]: negative tool id %d", i, h, t)
			}
		}
	}
	mask := make([][]bool, b)
	cells := make([]bool, b*(b+b*k))
	for i := range b {
		row := cells[i*(b+b*k) : (i+1)*(b+b*k)]
		q := queries[i]
		positive := func(t int) bool { return t == positives[i] || (rel != nil && rel(q, t)) }
		for j := range b {
			row[j] = j == i || queries[j] == q || positive(positives[j])
		}
		for r := 0; k > 0 && r < b; r++ {
			for h, t := range hardNegatives[r] {
				row[b+r*k+h] = positive(t)
			}
		}
		mask[i] = row
	}
	return mask, nil
}

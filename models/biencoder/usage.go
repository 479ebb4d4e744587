package biencoder

import (
	"fmt"
	"math"
)

// Tool vector kinds: how a retriever represents a tool.
const (
	// VectorsText: the tool tower's embedding of the tool's text.
	VectorsText = "text"
	// VectorsUsage: Tool2Vec, the tool as the mean embedding of the training queries that use
	// it (UsageVectors); tools no training query uses keep their text vector.
	VectorsUsage = "usage"
)

// ParseToolVectors checks a tool-vector kind ("" means text).
func ParseToolVectors(s string) (string, error) {
	switch s {
	case "", VectorsText:
		return VectorsText, nil
	case VectorsUsage:
		return VectorsUsage, nil
	}
	return "", fmt.Errorf("tool vectors %q: want %s or %s", s, VectorsText, VectorsUsage)
}

// UsageVectors computes Tool2Vec usage vectors, as the Tool2Vec paper defines them: a tool's vector
// is the mean of the L2-normalised embeddings of the training queries that use it.
//
// queryEmb[i] is the embedding of training query i and relevant[i] the tools (indices into
// fallback) it uses; a tool listed twice for one query counts once. fallback holds one
// vector per tool, normally its text vector: a tool that no training query uses keeps it
// (the returned row is fallback's row itself, shared). fallbacks is the number of such tools.
//
// With normalize (cosine models) every query embedding is L2-normalised before averaging and
// the mean is re-normalised, so usage and fallback vectors are unit vectors scored by cosine.
// Without it (dot-product models) the vector is the plain mean of the raw query embeddings,
// not re-normalised: a dot model's scores depend on vector lengths, its queries and fallback
// text vectors are unnormalised too, and the mean keeps the scale the model was trained at
// (normalising only the usage vectors would rank them against fallback tools on another
// scale).
//
// A zero vector stays zero (norms are clamped at 1e-12, as losses.Normalize does).
func UsageVectors(queryEmb [][]float32, relevant [][]int, fallback [][]float32, normalize bool) (vecs [][]float32, fallbacks int, err error) {
	if len(relevant) != len(queryEmb) {
		return nil, 0, fmt.Errorf("usage vectors: %d query embeddings for %d relevance lists", len(queryEmb), len(relevant))
	}
	if len(fallback) == 0 {
		return nil, 0, fmt.Errorf("usage vectors: no tools")
	}
	dim := len(fallback[0])
	for t, v := range fallback {
		if len(v) != dim {
			return nil, 0, fmt.Errorf("usage vectors: fallback vector of tool %d has %d dimensions, tool 0 %d", t, len(v), dim)
		}
	}
	sum := make([][]float64, len(fallback))
	cnt := make([]int, len(fallback))
	seen := make([]int, len(fallback)) // last query (+1) that counted a tool: de-duplicates a list
	x := make([]float64, dim)
	for i, q := range queryEmb {
		if len(q) != dim {
			return nil, 0, fmt.Errorf("usage vectors: query %d embedding has %d dimensions, tools %d", i, len(q), dim)
		}
		scale := 1.0
		if normalize {
			scale = 1 / norm64(q)
		}
		for k, v := range q {
			x[k] = float64(v) * scale
		}
		for _, t := range relevant[i] {
			if t < 0 || t >= len(fallback) {
				return nil, 0, fmt.Errorf("usage vectors: query %d uses tool %d, have %d tools", i, t, len(fallback))
			}
			if seen[t] == i+1 {
				continue
			}
			seen[t] = i + 1
			if sum[t] == nil {
				sum[t] = make([]float64, dim)
			}
			for k, v := range x {
				sum[t][k] += v
			}
			cnt[t]++
		}
	}
	vecs = make([][]float32, len(fallback))
	for t := range vecs {
		if cnt[t] == 0 {
			vecs[t] = fallback[t]
			fallbacks++
			continue
		}
		mean := sum[t]
		n := 0.0
		for k := range mean {
			mean[k] /= float64(cnt[t])
			n += mean[k] * mean[k]
		}
		scale := 1.0
		if normalize {
			scale = 1 / math.Sqrt(max(n, 1e-24))
		}
		v := make([]float32, dim)
		for k, m := range mean {
			v[k] = float32(m * scale)
		}
		vecs[t] = v
	}
	return vecs, fallbacks, nil
}

// norm64 is ‖v‖₂ clamped at 1e-12.
func norm64(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(max(s, 1e-24))
}

// UsageNote is the line that reports a usage-vector fallback: "usage vectors: N of T tools
// have no training query; they keep their text vector".
func UsageNote(fallbacks, tools int) string {
	return fmt.Sprintf("usage vectors: %d of %d tools have no training query; they keep their text vector", fallbacks, tools)
}

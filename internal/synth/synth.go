// Package synth makes synthetic tool embeddings with the structure of real ones, for the
// large-library benchmarks and the approximate-search tests: unit vectors of dimension Dim
// that lie near a Latent-dimensional subspace (sentence embeddings have a low intrinsic
// dimension) and gather in Clusters overlapping clusters (tools of one domain), so that a
// query's nearest tools are clearly nearer than the rest and recall against exact search
// means something. Uniform random unit vectors have neither: in 384 dimensions every tool is
// about as far from a query as every other.
//
// A vector is normalise(A·z/√Latent + Noise·g): z = μ_c + Spread·N(0, I) in the latent space
// around the centre μ_c ~ N(0, I) of a cluster c drawn uniformly, A a fixed Dim×Latent
// matrix of N(0, 1) entries, g ~ N(0, I_Dim). Queries are drawn the same way.
package synth

import (
	"math"
	"math/rand/v2"
)

// Gen draws vectors. Not safe for concurrent use.
type Gen struct {
	Dim, Latent, Clusters int
	Spread, Noise         float64
	rng                   *rand.Rand
	a                     []float32 // Dim×Latent, row-major
	cent                  [][]float64
}

// Default parameters: 24 latent dimensions, 100 clusters as wide as the spread of their
// centres (neighbouring clusters overlap), noise 0.3 per dimension (about 7% of a vector's
// variance at 384 dimensions).
const (
	Latent   = 24
	Clusters = 100
	Spread   = 1.0
	Noise    = 0.3
)

// New returns a generator of dim-dimensional vectors with the default parameters (Latent at
// most dim), seeded with seed.
func New(dim int, seed uint64) *Gen {
	g := &Gen{Dim: dim, Latent: min(Latent, dim), Clusters: Clusters, Spread: Spread, Noise: Noise,
		rng: rand.New(rand.NewPCG(seed, 0x5eed))}
	g.a = make([]float32, g.Dim*g.Latent)
	for i := range g.a {
		g.a[i] = float32(g.rng.NormFloat64())
	}
	g.cent = make([][]float64, g.Clusters)
	for i := range g.cent {
		g.cent[i] = make([]float64, g.Latent)
		for j := range g.cent[i] {
			g.cent[i][j] = g.rng.NormFloat64()
		}
	}
	return g
}

// Next fills v (length Dim) with the next vector.
func (g *Gen) Next(v []float32) {
	c := g.cent[g.rng.IntN(len(g.cent))]
	z := make([]float32, g.Latent)
	for j := range z {
		z[j] = float32(c[j] + g.Spread*g.rng.NormFloat64())
	}
	scale := float32(1 / math.Sqrt(float64(g.Latent)))
	norm := 0.0
	for i := range v {
		s := float32(0)
		for j, x := range g.a[i*g.Latent : (i+1)*g.Latent] {
			s += x * z[j]
		}
		v[i] = s*scale + float32(g.Noise*g.rng.NormFloat64())
		norm += float64(v[i]) * float64(v[i])
	}
	inv := float32(1 / math.Sqrt(norm))
	for i := range v {
		v[i] *= inv
	}
}

// Vectors returns n vectors, their rows backed by one array.
func (g *Gen) Vectors(n int) [][]float32 {
	flat := make([]float32, n*g.Dim)
	out := make([][]float32, n)
	for i := range out {
		out[i] = flat[i*g.Dim : (i+1)*g.Dim : (i+1)*g.Dim]
		g.Next(out[i])
	}
	return out
}

//go:build goexperiment.simd || !amd64

package backend

// SIMD reports whether this binary was built with Go's SIMD experiment (always true off amd64,
// where the warning does not apply).
const SIMD = true

const simdWarning = ""

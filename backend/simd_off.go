//go:build !goexperiment.simd && amd64

package backend

// SIMD reports whether this binary was built with Go's SIMD experiment.
const SIMD = false

const simdWarning = "toolret: warning: built without GOEXPERIMENT=simd; the go backend is ~40x slower (build with `make` or GOEXPERIMENT=simd GOTOOLCHAIN=go1.27.4)"

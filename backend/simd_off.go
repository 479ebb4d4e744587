//go:build !goexperiment.simd && amd64

package backend

// SIMD reports whether this binary was built with Go's SIMD experiment.
const SIMD = false

// simdWarning names the variables exactly as the Makefile sets them (backend/env_test.go).
const simdWarning = "toolret: warning: built without GOEXPERIMENT=simd; the go backend is ~40x slower: rebuild after `export GOTOOLCHAIN=go1.27.4 GOEXPERIMENT=simd` (what make sets; or `eval \"$(make -s env)\"`)"

package exporttest

import (
	"testing"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
)

// GoDefault opens the pure-Go backend and the embedded default dataset, the set-up of most
// tests that train, export and serve tiny runs; it stops tb on an error.
func GoDefault(tb testing.TB) (compute.Backend, *data.Dataset) {
	tb.Helper()
	be, err := backend.Open("go")
	if err != nil {
		tb.Fatal(err)
	}
	d, err := data.Default()
	if err != nil {
		tb.Fatal(err)
	}
	return be, d
}

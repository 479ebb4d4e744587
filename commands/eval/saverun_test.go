package evalcmd

import (
	"strings"
	"testing"
)

// TestRunTag: -save-run's default tag names what was evaluated.
func TestRunTag(t *testing.T) {
	for _, c := range []struct {
		o    options
		want string
	}{
		{options{runTag: "mine", run: "r"}, "mine"},
		{options{run: "runs/x"}, "toolret-run"},
		{options{index: "idx", method: "bm25"}, "toolret-index"},
		{options{model: "m", index: "/tmp/built", method: "bm25"}, "toolret-model"},
		{options{method: "bm25"}, "toolret-bm25"},
		{options{method: "toolrerank no hierarchy"}, "toolret-toolrerank-no-hierarchy"},
	} {
		if got := runTag(&c.o); got != c.want {
			t.Errorf("runTag(%+v) = %q, want %q", c.o, got, c.want)
		}
	}
}

// TestEnsembleFlags: -ensemble goes with -index only, and its weights with -ensemble.
func TestEnsembleFlags(t *testing.T) {
	for _, c := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"method": "bm25", "ensemble": "x"}, "give -index"},
		{map[string]string{"index": "x", "ensemble-weights": "1,1"}, "need -ensemble"},
		{map[string]string{"index": "x", "ensemble": "y", "ensemble-weights": "1,one"}, "weight 2"},
	} {
		if err := runErr(c.kv); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.kv, err, c.want)
		}
	}
}

package evalcmd

import "testing"

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

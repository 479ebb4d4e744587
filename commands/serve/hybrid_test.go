package servecmd

import (
	"strings"
	"testing"
)

func TestParseHybrid(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		method string
		w      float64
	}{
		{[]string{"-index", "x"}, "", 0.5}, // DefaultServeConfig's weight, unused without -hybrid
		{[]string{"-index", "x", "-hybrid", "rrf"}, "rrf", 0},
		{[]string{"-index", "x", "-hybrid", "minmax"}, "minmax", 0.5},
		{[]string{"-index", "x", "-hybrid", "zscore", "-hybrid-weight", "0.3"}, "zscore", 0.3},
		{[]string{"-index", "x", "-hybrid", "minmax", "-hybrid-weight", "0"}, "minmax", 0},
		{[]string{"-index", "x", "-hybrid", "rrf", "-reranker", "ce", "-depth", "10"}, "rrf", 0}, // the reranker reranks the hybrid's top 10
	} {
		o, err := parse(tc.args)
		if err != nil {
			t.Fatalf("parse(%q): %v", tc.args, err)
		}
		if o.cfg.Hybrid != tc.method || o.cfg.HybridWeight != tc.w {
			t.Errorf("parse(%q): hybrid %q weight %g, want %q %g", tc.args, o.cfg.Hybrid, o.cfg.HybridWeight, tc.method, tc.w)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-index", "x", "-hybrid", "sum"}, `-hybrid "sum": want rrf, minmax or zscore`},
		{[]string{"-index", "x", "-hybrid-weight", "0.5"}, "-hybrid-weight needs -hybrid minmax or zscore"},
		{[]string{"-index", "x", "-hybrid", "rrf", "-hybrid-weight", "0.5"}, "rrf has no weight"},
		{[]string{"-index", "x", "-hybrid", "minmax", "-hybrid-weight", "1.5"}, "-hybrid-weight 1.5: want a weight in [0, 1]"},
		{[]string{"-index", "x", "-hybrid", "zscore", "-hybrid-weight", "-0.2"}, "-hybrid-weight -0.2: want a weight in [0, 1]"},
	} {
		if _, err := parse(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q): %v, want %q", tc.args, err, tc.want)
		}
	}
}

package servecmd

import (
	"slices"
	"strings"
	"testing"
)

func TestParseEnsemble(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		members []string
		method  string
		w       []float64
	}{
		{[]string{"-index", "x"}, nil, "", nil},
		{[]string{"-index", "x", "-ensemble", "y,z"}, []string{"y", "z"}, "rrf", nil},
		{[]string{"-index", "x", "-ensemble", "y, z", "-ensemble-weights", "0.1,0.6,0.3"}, []string{"y", "z"}, "zscore", []float64{0.1, 0.6, 0.3}},
		{[]string{"-index", "x", "-ensemble", "y", "-ensemble-fusion", "minmax", "-ensemble-weights", "1,1"}, []string{"y"}, "minmax", []float64{1, 1}},
	} {
		o, err := parse(tc.args)
		if err != nil {
			t.Fatalf("parse(%q): %v", tc.args, err)
		}
		if !slices.Equal(o.cfg.Ensemble, tc.members) || o.cfg.EnsembleFusion != tc.method || !slices.Equal(o.cfg.EnsembleWeights, tc.w) {
			t.Errorf("parse(%q): ensemble %q %q %v, want %q %q %v", tc.args, o.cfg.Ensemble, o.cfg.EnsembleFusion, o.cfg.EnsembleWeights, tc.members, tc.method, tc.w)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-index", "x", "-ensemble-weights", "0.5,0.5"}, "need -ensemble"},
		{[]string{"-index", "x", "-ensemble-fusion", "rrf"}, "need -ensemble"},
		{[]string{"-index", "x", "-ensemble", "y,,z"}, "an empty directory name"},
		{[]string{"-index", "x", "-ensemble", "y", "-ensemble-weights", "0.5,abc"}, "weight 2"},
		{[]string{"-library", "lib.jsonl", "-model", "m", "-ensemble", "y"}, "give -index, without -library"},
	} {
		if _, err := parse(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q): %v, want %q", tc.args, err, tc.want)
		}
	}
}

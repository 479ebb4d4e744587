package cli

import (
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestEnsembleValues(t *testing.T) {
	var none *Ensemble
	if m, meth, w, err := none.Values(); m != nil || meth != "" || w != nil || err != nil {
		t.Errorf("nil Ensemble: %v %q %v %v", m, meth, w, err)
	}
	for _, c := range []struct {
		args    []string
		members []string
		method  string
		w       []float64
		err     string
	}{
		{nil, nil, "", nil, ""},
		{[]string{"-ensemble", "a,b"}, []string{"a", "b"}, "rrf", nil, ""},
		{[]string{"-ensemble", "a", "-ensemble-weights", "0.3, 0.7"}, []string{"a"}, "zscore", []float64{0.3, 0.7}, ""},
		{[]string{"-ensemble", "a", "-ensemble-fusion", "minmax", "-ensemble-weights", "1,2"}, []string{"a"}, "minmax", []float64{1, 2}, ""},
		{[]string{"-ensemble-weights", "1,2"}, nil, "", nil, "need -ensemble"},
		{[]string{"-ensemble", "a,"}, nil, "", nil, "empty directory name"},
		{[]string{"-ensemble", "a", "-ensemble-weights", "x"}, nil, "", nil, "weight 1"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		e := EnsembleFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		m, meth, w, err := e.Values()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(m, c.members) || meth != c.method || !slices.Equal(w, c.w) {
			t.Errorf("%q: %q %q %v %v, want %q %q %v", c.args, m, meth, w, err, c.members, c.method, c.w)
		}
	}
}

package servecmd

import (
	"strings"
	"testing"
)

func TestParseANN(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		err  string
	}{
		{[]string{"-index", "x"}, "auto", ""},
		{[]string{"-index", "x", "-ann", "on"}, "on", ""},
		{[]string{"-index", "x", "-ann", "off"}, "off", ""},
		{[]string{"-index", "x", "-ann", "hnsw"}, "", `-ann "hnsw": want auto, on or off`},
	} {
		o, err := parse(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parse(%q): error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || o.cfg.ANN != tc.want {
			t.Errorf("parse(%q): ann %q, %v; want %q", tc.args, o.cfg.ANN, err, tc.want)
		}
	}
}

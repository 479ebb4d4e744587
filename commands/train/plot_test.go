package traincmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlotCmd(t *testing.T) {
	tmp := t.TempDir()
	var runs []string
	for _, name := range []string{"a", "b"} {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		m := `{"step":1,"loss":2,"lr":0.001}` + "\n" + `{"step":2,"loss":1,"lr":0.001,"dev_ndcg@5":40}` + "\n"
		if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, dir)
	}
	if err := plotCmd(runs[:1]); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "both.html")
	if err := plotCmd(append([]string{"-out", out}, runs...)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(runs[0], "plot.html"), out} {
		if b, err := os.ReadFile(p); err != nil || !strings.Contains(string(b), `data-panel="dev_ndcg"`) {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give the run directories"},
		{runs, "2 runs overlaid need -out"},
		{[]string{"-out", out, filepath.Join(tmp, "none")}, "none"},
	} {
		if err := plotCmd(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("plot %q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

package exportcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
)

// TestKeepLayersFlag: `export -keep-layers` prunes a run (exported to HF first), alone and
// after -interpolate, into a model that loads; bad lists are usage errors, a layer the model
// lacks an error that names it, and no output is left behind.
func TestKeepLayersFlag(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	run, run2 := filepath.Join(tmp, "run"), filepath.Join(tmp, "run2")
	for i, r := range []string{run, run2} {
		if err := exporttest.WriteRun(r, exporttest.Options{Layers: 3}, be, uint64(11+i)); err != nil {
			t.Fatal(err)
		}
	}
	sep := filepath.Join(tmp, "sep")
	if err := exporttest.WriteRun(sep, exporttest.Options{Layers: 3, Separate: true}, be, 13); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		args   []string
		code   int
		layers float64
	}{
		{[]string{"-model", run, "-keep-layers", "0,2"}, 0, 2},
		{[]string{"-model", run, "-interpolate", run2, "-keep-layers", "1"}, 0, 1},
		{[]string{"-model", run, "-keep-layers", "0,3"}, 1, 0},
		{[]string{"-model", run, "-keep-layers", "2,1"}, 2, 0},
		{[]string{"-model", run, "-keep-layers", "x"}, 2, 0},
		{[]string{"-model", sep, "-keep-layers", "0"}, 1, 0},
		{[]string{"-model", sep, "-interpolate", run, "-keep-layers", "0"}, 1, 0},
	} {
		out := filepath.Join(tmp, "out", string(rune('a'+i)))
		if code := Main(append(c.args, "-out", out)); code != c.code {
			t.Fatalf("%v: exit %d, want %d", c.args, code, c.code)
		}
		if c.code != 0 {
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%v: output left after an error", c.args)
			}
			continue
		}
		raw, err := os.ReadFile(filepath.Join(out, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal(raw, &cfg); err != nil || cfg["num_hidden_layers"] != c.layers {
			t.Errorf("%v: num_hidden_layers %v (%v)", c.args, cfg["num_hidden_layers"], err)
		}
		m, err := export.LoadHF(out, be)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Embed("tool", []string{"send an email"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = toolret.Export(t.Context(), toolret.ExportConfig{Model: sep, KeepLayers: []int{0}, Out: filepath.Join(tmp, "sep-out")})
	if err == nil || !strings.Contains(err.Error(), "separate query and tool towers") {
		t.Errorf("separate towers: %v, want an error naming them", err)
	}
}

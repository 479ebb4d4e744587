package exportcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
)

func TestExportCommand(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(t.TempDir(), "run")
	if err := exporttest.WriteRun(run, exporttest.Options{}, be, 9); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for _, tc := range []struct {
		format, data string
		files        []string
	}{
		{"hf", "", []string{"config.json", "model.safetensors", "tokenizer.json", "modules.json", "2_Normalize", "onnx/model.onnx"}},
		{"onnx", "", []string{"model.onnx", "vocab.txt"}},
		{"index", "", []string{"tools.safetensors", "tools.jsonl", "query/model.safetensors"}},
		{"index", "../../data/default", []string{"tools.jsonl"}},
	} {
		out := filepath.Join(tmp, tc.format)
		if tc.data != "" {
			out += "-data"
		}
		man, err := runExport(run, tc.format, out, false, tc.data, "go")
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if man.Kind != export.KindBiEncoder || man.Source != run || man.DataFingerprint == "" {
			t.Fatalf("%s: manifest %+v", tc.format, man)
		}
		for _, f := range append(tc.files, export.ManifestFile) {
			if _, err := os.Stat(filepath.Join(out, f)); err != nil {
				t.Errorf("%s: %v", tc.format, err)
			}
		}
	}
	// Again without -force: refused; with -force: replaced.
	out := filepath.Join(tmp, "hf")
	if _, err := runExport(run, "hf", out, false, "", "go"); err == nil || !strings.Contains(err.Error(), "-force") {
		t.Fatalf("existing output: %v", err)
	}
	if _, err := runExport(run, "onnx", out, true, "", "go"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		run, format, out, data, want string
	}{
		{"", "hf", out, "", "-run and -out are required"},
		{run, "hf", "", "", "-run and -out are required"},
		{run, "gguf", out, "", `unknown -format "gguf"`},
		{run, "hf", out, "../../data/default", "-data is only used"},
		{tmp, "hf", filepath.Join(tmp, "x"), "", "no checkpoints"},
	} {
		if _, err := runExport(tc.run, tc.format, tc.out, false, tc.data, "go"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v", tc, err)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "x")); err == nil {
		t.Error("failed export left its output")
	}
}

package exportcmd

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
)

// TestExportPrecision: -format index -precision bf16 of a trained run (embedded by the run's
// own code) and of its hf export records bf16, and the tool vectors are close to the fp32
// index's (cosine > 0.999) but not identical; -precision is refused with -update and with
// -format hf.
func TestExportPrecision(t *testing.T) {
	tmp := t.TempDir()
	run, model := testModel(t, tmp)
	for _, src := range []struct{ name, flag, path string }{{"run", "-run", run}, {"hf", "-model", model}} {
		vecs := map[string][]float32{}
		for _, p := range []string{backend.FP32, backend.BF16} {
			out := filepath.Join(tmp, src.name+"-"+p)
			if rc := Main([]string{src.flag, src.path, "-format", "index", "-backend", "go", "-precision", p, "-out", out}); rc != 0 {
				t.Fatalf("%s -precision %s: exit %d", src.name, p, rc)
			}
			man, err := export.ReadManifest(out)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{backend.FP32: "", backend.BF16: backend.BF16}[p]; man.Precision != want {
				t.Errorf("%s -precision %s: manifest precision %q, want %q", src.name, p, man.Precision, want)
			}
			_, flat, _, _, err := export.ReadIndexFiles(out)
			if err != nil {
				t.Fatal(err)
			}
			vecs[p] = flat
		}
		a, b := vecs[backend.FP32], vecs[backend.BF16]
		var dot, na, nb float64
		same := len(a) == len(b)
		for i := range min(len(a), len(b)) {
			dot, na, nb = dot+float64(a[i])*float64(b[i]), na+float64(a[i])*float64(a[i]), nb+float64(b[i])*float64(b[i])
			same = same && a[i] == b[i]
		}
		cos := dot / math.Sqrt(na*nb)
		t.Logf("%s: cosine of all bf16 and fp32 tool vectors %.6f", src.name, cos)
		if len(a) != len(b) || !(cos > 0.999) || same {
			t.Errorf("%s: %d and %d values, cosine %.6f, identical %v; want equal lengths, > 0.999, not identical", src.name, len(a), len(b), cos, same)
		}
	}
	if rc := Main([]string{"-format", "index", "-update", "-out", filepath.Join(tmp, "run-bf16"), "-precision", "bf16"}); rc != 2 {
		t.Errorf("-update -precision bf16: exit %d, want 2", rc)
	}
	if rc := Main([]string{"-model", model, "-format", "hf", "-precision", "bf16", "-out", filepath.Join(tmp, "hf-bf16")}); rc != 1 {
		t.Errorf("-format hf -precision bf16: exit %d, want 1", rc)
	}
}

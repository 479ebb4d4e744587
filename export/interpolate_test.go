package export_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/safetensors"
)

func TestInterpolateHF(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, b, wide := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "wide")
	for _, m := range []struct {
		dir  string
		o    exporttest.Options
		seed uint64
	}{{a, exporttest.Options{}, 1}, {b, exporttest.Options{}, 2}, {wide, exporttest.Options{Hidden: 48}, 3}} {
		if err := exporttest.WriteHF(m.dir, m.o, be, m.seed); err != nil {
			t.Fatal(err)
		}
	}
	read := func(dir string) *safetensors.File {
		f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	fa, fb := read(a), read(b)
	for _, alpha := range []float64{0, 0.3, 1} {
		out := filepath.Join(dir, "out", strings.ReplaceAll(filepath.Base(t.Name())+"-"+string(rune('0'+int(alpha*10))), "/", "-"))
		if err := export.InterpolateHF(out, a, b, alpha); err != nil {
			t.Fatal(err)
		}
		fo := read(out)
		for _, name := range fa.Names() {
			va, _, _ := fa.Float32(name)
			vb, _, _ := fb.Float32(name)
			vo, _, err := fo.Float32(name)
			if err != nil {
				t.Fatalf("alpha %g: %v", alpha, err)
			}
			for i := range va {
				want := (1-alpha)*float64(va[i]) + alpha*float64(vb[i])
				if math.Abs(float64(vo[i])-want) > 1e-6 {
					t.Fatalf("alpha %g: %s[%d] = %g, want %g", alpha, name, i, vo[i], want)
				}
			}
		}
		m, err := export.LoadHF(out, be) // a loadable model, a's configuration and tokenizer
		if err != nil {
			t.Fatalf("alpha %g: %v", alpha, err)
		}
		if _, err := m.Embed("query", []string{"book a flight"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		out, a, b string
		alpha     float64
		want      string
	}{
		{filepath.Join(dir, "x1"), a, wide, 0.5, "shape"},
		{filepath.Join(dir, "x2"), a, b, 1.5, "want a value in [0, 1]"},
		{filepath.Join(dir, "x3"), a, filepath.Join(dir, "missing"), 0.5, "model.safetensors"},
		{a, a, b, 0.5, "exists"},
	} {
		if err := export.InterpolateHF(c.out, c.a, c.b, c.alpha); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("InterpolateHF(%s, %s, %g): %v, want an error containing %q", c.a, c.b, c.alpha, err, c.want)
		}
	}
}

package toolindex_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/toolindex"
)

// closeNotSame checks that every pair of rows of a and b has cosine > 0.999 and that some
// value differs: bf16 against fp32 vectors.
func closeNotSame(t *testing.T, what string, a, b [][]float32) {
	t.Helper()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%s: %d and %d vectors", what, len(a), len(b))
	}
	same, worst := true, 1.0
	for i := range a {
		var dot, na, nb float64
		for j := range a[i] {
			x, y := float64(a[i][j]), float64(b[i][j])
			dot, na, nb = dot+x*y, na+x*x, nb+y*y
			same = same && a[i][j] == b[i][j]
		}
		worst = min(worst, dot/math.Sqrt(na*nb))
	}
	t.Logf("%s: %d vectors, smallest cosine(bf16, fp32) %.6f", what, len(a), worst)
	if !(worst > 0.999) {
		t.Errorf("%s: smallest cosine of bf16 and fp32 vectors %.6f, want > 0.999", what, worst)
	}
	if same {
		t.Errorf("%s: bf16 vectors bit-identical to fp32: not embedded in bfloat16", what)
	}
}

func TestPrecisionIndex(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dirs := map[string]string{}
	for _, p := range []string{backend.FP32, backend.BF16} {
		m, err := exporttest.BiEncoder(exporttest.Options{}, be, 1)
		if err != nil {
			t.Fatal(err)
		}
		dirs[p] = filepath.Join(tmp, p)
		man, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: dirs[p], Precision: p})
		if err != nil {
			t.Fatalf("export at %s: %v", p, err)
		}
		want := p
		if p == backend.FP32 {
			want = ""
		}
		if man.Precision != want {
			t.Errorf("export at %s: manifest precision %q, want %q", p, man.Precision, want)
		}
	}
	// The fp32 index's manifest has no precision field: what indexes written before it was
	// recorded look like, which load as fp32.
	b, err := os.ReadFile(filepath.Join(dirs[backend.FP32], export.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["precision"]; ok {
		t.Errorf("fp32 index manifest has a precision field: %s", b)
	}
	tools := map[string][][]float32{}
	for p, dir := range dirs {
		_, flat, dim, _, err := export.ReadIndexFiles(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+dim <= len(flat); i += dim {
			tools[p] = append(tools[p], flat[i:i+dim])
		}
	}
	closeNotSame(t, "tool vectors", tools[backend.BF16], tools[backend.FP32])

	queries := []string{"what is the weather like in Lisbon tomorrow?", "convert 100 dollars to euros", "send an email to my boss"}
	embed := func(dir string, opts ...toolindex.Option) (string, [][]float32) {
		t.Helper()
		r, err := toolindex.Load(dir, append([]toolindex.Option{toolindex.WithBackend(be)}, opts...)...)
		if err != nil {
			t.Fatalf("load %s: %v", dir, err)
		}
		v, err := r.EmbedQueries(context.Background(), queries)
		if err != nil {
			t.Fatal(err)
		}
		return r.Precision(), v
	}
	p32, q32 := embed(dirs[backend.FP32])
	p16, q16 := embed(dirs[backend.BF16])
	if p32 != "" || p16 != backend.BF16 {
		t.Errorf("loaded precisions %q (fp32 index), %q (bf16 index); want \"\", %q", p32, p16, backend.BF16)
	}
	closeNotSame(t, "query vectors of the bf16 index", q16, q32)
	// WithPrecision overrides the index's own, both ways.
	if p, v := embed(dirs[backend.BF16], toolindex.WithPrecision(backend.FP32)); p != "" || !equalRows(v, q32) {
		t.Errorf("bf16 index with WithPrecision(fp32): precision %q, query vectors equal to fp32 %v; want \"\", true", p, equalRows(v, q32))
	}
	if p, v := embed(dirs[backend.FP32], toolindex.WithPrecision(backend.BF16)); p != backend.BF16 || !equalRows(v, q16) {
		t.Errorf("fp32 index with WithPrecision(bf16): precision %q, query vectors equal to the bf16 index's %v; want %q, true", p, equalRows(v, q16), backend.BF16)
	}
	// auto on the go backend is fp32 (no native bfloat16 matmul).
	if p, _ := embed(dirs[backend.BF16], toolindex.WithPrecision(backend.AutoPrecision)); p != "" {
		t.Errorf("WithPrecision(auto) on the go backend: %q, want fp32", p)
	}
	if _, err := toolindex.Load(dirs[backend.BF16], toolindex.WithBackend(be), toolindex.WithPrecision("fp16")); err == nil || !strings.Contains(err.Error(), "fp16") {
		t.Errorf("WithPrecision(fp16): %v, want an error naming it", err)
	}
}

func equalRows(a, b [][]float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

func TestPrecisionExportErrors(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	m, err := exporttest.BiEncoder(exporttest.Options{}, be, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts export.Options
		want string
	}{
		{"bf16 and int8", export.Options{Format: export.FormatIndex, Precision: backend.BF16, Quantize: export.QuantInt8}, "one or the other"},
		{"bf16 hf export", export.Options{Format: export.FormatHF, Precision: backend.BF16}, "-format index"},
		{"unknown precision", export.Options{Format: export.FormatIndex, Precision: "fp16"}, "fp16"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Out = filepath.Join(t.TempDir(), "out")
			_, err := export.Export(m, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want an error containing %q", err, c.want)
			}
			if _, serr := os.Stat(c.opts.Out); serr == nil {
				t.Errorf("%s written despite the error", c.opts.Out)
			}
		})
	}
}

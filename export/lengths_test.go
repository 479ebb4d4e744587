package export_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/models/biencoder"
)

// TestRunLengths: lengths applied to a trained run's model (export -run RUN -tool-len N) make
// it embed tools as the run's embedder does with those lengths, past its training length
// (64); lengths out of range are refused with the model's unchanged.
func TestRunLengths(t *testing.T) {
	be := goBackend(t)
	run := filepath.Join(t.TempDir(), "run")
	if err := exporttest.WriteRun(run, exporttest.Options{}, be, 3); err != nil {
		t.Fatal(err)
	}
	long := []string{strings.Repeat("find the weather forecast for paris and send it by email ", 12)}
	embed := func(m *export.Model) []float32 {
		t.Helper()
		out, err := m.Embed(biencoder.ToolTower, long)
		if err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	m, err := export.LoadModel(run, be)
	if err != nil {
		t.Fatal(err)
	}
	trained := embed(m)
	if err := (export.Lengths{Tool: 128}).Apply(m); err != nil {
		t.Fatal(err)
	}
	if m.QueryMaxLen != 32 || m.ToolMaxLen != 128 {
		t.Fatalf("lengths after Apply: query %d, tool %d; want 32, 128", m.QueryMaxLen, m.ToolMaxLen)
	}
	e, err := biencoder.LoadRun(run, be)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetLengths(0, 128); err != nil {
		t.Fatal(err)
	}
	want, err := e.Embed(biencoder.ToolTower, long)
	if err != nil {
		t.Fatal(err)
	}
	got := embed(m)
	if d := maxDiff(t, want, [][]float32{got}); d > 1e-6 {
		t.Fatalf("run model with tool length 128 vs the run's embedder with it: max abs diff %g", d)
	}
	if d := maxDiff(t, [][]float32{trained}, [][]float32{got}); d == 0 {
		t.Fatal("tool length 128 embedded the long text as the training length (64) did")
	}
	// The index records the lengths: its tower (what serve embeds queries and new tools with)
	// reads back with them.
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(t.TempDir(), "index")
	if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: index, Data: d}); err != nil {
		t.Fatal(err)
	}
	tower, err := export.LoadHF(filepath.Join(index, export.IndexQueryDir), be)
	if err != nil {
		t.Fatal(err)
	}
	if tower.QueryMaxLen != 32 || tower.ToolMaxLen != 128 {
		t.Errorf("the index's tower reads back lengths query %d, tool %d; want 32, 128", tower.QueryMaxLen, tower.ToolMaxLen)
	}
	for _, l := range []export.Lengths{{Query: 1}, {Tool: -1}, {Tool: 129}, {Query: 129}} {
		m, err := export.LoadModel(run, be)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Apply(m); err == nil || !strings.Contains(err.Error(), "length") {
			t.Errorf("Apply(%+v) = %v, want a length error", l, err)
		}
		if m.QueryMaxLen != 32 || m.ToolMaxLen != 64 {
			t.Errorf("Apply(%+v) refused but changed the lengths to %d, %d", l, m.QueryMaxLen, m.ToolMaxLen)
		}
	}
}

package evalcmd

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
)

// TestModel evaluates a pre-trained model (a tiny HF directory, and the same model by hub id)
// zero-shot with -model: the metrics equal those of its exported index under -index, and
// -hybrid applies; the bad combinations are refused.
func TestModel(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hf, cache, _, err := exporttest.HubModel(dir, "toolret-test/tiny", exporttest.Options{}, be, 11)
	if err != nil {
		t.Fatal(err)
	}
	m, err := export.LoadHF(hf, be)
	if err != nil {
		t.Fatal(err)
	}
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(dir, "index")
	if _, err := export.Export(m, export.Options{Format: export.FormatIndex, Out: index, Data: d}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
	want := runJSON(t, map[string]string{"index": index, "backend": "go"})
	if r, _ := want["recall@10"].(float64); r <= 0 {
		t.Fatalf("recall@10 = %v: the comparison is vacuous", want["recall@10"])
	}
	for _, ref := range []string{hf, "toolret-test/tiny"} {
		if got := runJSON(t, map[string]string{"model": ref, "backend": "go"}); !reflect.DeepEqual(got, want) {
			t.Errorf("-model %s %v\n-index %v", ref, got, want)
		}
	}
	hyb := runJSON(t, map[string]string{"model": hf, "backend": "go", "hybrid": "zscore"})
	if reflect.DeepEqual(hyb, want) {
		t.Errorf("-hybrid zscore changed nothing")
	}
	prompted := runJSON(t, map[string]string{"model": hf, "backend": "go", "query-prompt": "search: "})
	if reflect.DeepEqual(prompted, want) {
		t.Errorf("-query-prompt changed nothing")
	}
	// model:REF in -runs ranks as -model REF: fused alone at weight 1 it is the same ranking;
	// at 0.5 with bm25 it is neither's.
	fused := runJSON(t, map[string]string{"method": "fusion", "runs": "model:toolret-test/tiny,bm25", "weight": "1", "backend": "go"})
	if !reflect.DeepEqual(fused, want) {
		t.Errorf("-runs model:toolret-test/tiny,bm25 -weight 1 %v\n-model %v", fused, want)
	}
	if half := runJSON(t, map[string]string{"method": "fusion", "runs": "model:" + hf + ",bm25", "weight": "0.5", "backend": "go"}); reflect.DeepEqual(half, want) {
		t.Errorf("-runs model:%s,bm25 -weight 0.5 equals the model alone", hf)
	}
	for _, c := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"method": "fusion", "runs": "model:,bm25", "weight": "0.5"}, "model: needs a model directory"},
		{map[string]string{"method": "fusion", "runs": "model:toolret-test/absent,bm25", "weight": "0.5"}, "make models"},
		{map[string]string{"model": hf, "run": hf}, "not with -run"},
		{map[string]string{"model": hf, "index": index}, "not with -run or -index"},
		{map[string]string{"query-prompt": "q: "}, "apply to -model"},
		{map[string]string{"model": "toolret-test/absent"}, "make models"},
		{map[string]string{"model": hf, "method": "fusion", "runs": "bm25"}, "-method fusion"},
	} {
		if err := runErr(c.kv); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.kv, err, c.want)
		}
	}
}

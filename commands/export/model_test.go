package exportcmd

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/toolindex"
)

// TestExportModel exports a zero-shot index straight from a pre-trained model (by directory
// and by hub id, no training, no queries needed), with its prompts recorded, and refuses a
// refiner for it.
func TestExportModel(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	hf, cache, _, err := exporttest.HubModel(tmp, "toolret-test/zs", exporttest.Options{}, be, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
	q := "query: "
	for i, ref := range []string{hf, "toolret-test/zs"} {
		out := filepath.Join(tmp, fmt.Sprintf("index%d", i))
		man, err := exportModel(ref, export.FormatIndex, out, false, "", "go", "", export.Prompts{Query: &q})
		if err != nil {
			t.Fatal(err)
		}
		if man.Kind != export.KindBiEncoder || man.Tools == 0 || man.QueryPrompt != q || man.Usage != nil {
			t.Errorf("%d: manifest kind %s, %d tools, prompt %q, usage %v", i, man.Kind, man.Tools, man.QueryPrompt, man.Usage)
		}
		r, err := toolindex.Load(out, toolindex.WithBackend(be))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Retrieve(t.Context(), "send an email", 3); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := exportModel(hf, export.FormatIndex, filepath.Join(tmp, "x"), false, "", "go", hf, export.Prompts{}); err == nil || !strings.Contains(err.Error(), "pre-trained model") {
		t.Errorf("-refiner with a pre-trained model: %v", err)
	}
}

package exportcmd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/toolindex"
	"github.com/toolret/toolret/toolindex/store"
)

// TestMLCIndexCommand exports an MLC classifier run as an index (no usage vectors, though the
// run records its split and -data is its training data), then updates it: a server's removal
// of tools survives the compaction (the bias is rewritten with the rows), and -update with a
// tool the classifier does not know is refused.
func TestMLCIndexCommand(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	run := filepath.Join(tmp, "mlc")
	if err := exporttest.WriteClassifierRun(run, exporttest.ClassifierOptions{}, be, 9); err != nil {
		t.Fatal(err)
	}
	ddir := filepath.Join(tmp, "data")
	if err := os.CopyFS(ddir, os.DirFS("../../data/default")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "index")
	man, err := exportRun(run, "index", out, false, ddir, "go", "")
	if err != nil {
		t.Fatal(err)
	}
	if man.Stage() != export.FirstStageMLC || man.Usage != nil || man.MLC == nil {
		t.Fatalf("manifest: first stage %q, usage %+v, mlc %+v", man.FirstStage, man.Usage, man.MLC)
	}
	if msg, err := runUpdate("", "index", out, false, ddir, "go"); err != nil || !strings.Contains(msg, "0 added, 0 changed, 0 deleted") {
		t.Fatalf("update without changes: %q, %v", msg, err)
	}
	ctx := context.Background()
	const q = "what is the weather like in Lisbon tomorrow?"
	r, err := toolindex.Load(out, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	before, err := r.Retrieve(ctx, q, 12)
	if err != nil {
		t.Fatal(err)
	}
	gone := []string{before[1].ToolID, r.Library().Tool(0).ID}
	st, err := store.Open(out, 0, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Update(nil, gone); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Update([]export.ToolRecord{{ID: "new-tool", Text: "a new tool"}}, nil); err == nil || !strings.Contains(err.Error(), "its tools are its labels") {
		t.Errorf("adding a tool to a served MLC index: %v", err)
	}
	if err := st.Close(); err != nil { // compacts the removal into the index
		t.Fatal(err)
	}
	r2, err := toolindex.Load(out, toolindex.WithBackend(be))
	if err != nil {
		t.Fatal(err)
	}
	if r2.Len() != r.Len()-2 || r2.FirstStage() != export.FirstStageMLC || r2.Metadata()[store.VersionKey] != "1" {
		t.Fatalf("compacted index: %d tools (want %d), first stage %s, metadata %v", r2.Len(), r.Len()-2, r2.FirstStage(), r2.Metadata())
	}
	after, err := r2.Retrieve(ctx, q, 10)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	var scores []float32
	for _, x := range before {
		if !slices.Contains(gone, x.ToolID) {
			want, scores = append(want, x.ToolID), append(scores, x.Score)
		}
	}
	for j, x := range after {
		if x.ToolID != want[j] || x.Score != scores[j] {
			t.Errorf("result %d after the compaction: %s %v, want %s %v", j, x.ToolID, x.Score, want[j], scores[j])
		}
	}
	// -data with a tool the classifier does not know.
	f, err := os.OpenFile(filepath.Join(ddir, "corpus.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"_id": "extra-tool", "title": "extra", "text": "an extra tool"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := runUpdate("", "index", out, false, ddir, "go"); err == nil || !strings.Contains(err.Error(), "index from an MLC classifier: its tools are its labels; retrain to add tools") {
		t.Errorf("-update adding a tool to an MLC index: %v", err)
	}
	if _, err := exportRun(run, "index", filepath.Join(tmp, "index2"), false, ddir, "go", ""); err == nil || !strings.Contains(err.Error(), `tool "extra-tool" of `+ddir+" is not a label") {
		t.Errorf("export over data with a tool the classifier does not know: %v", err)
	}
	if r3, err := toolindex.Load(out, toolindex.WithBackend(be)); err != nil || r3.Len() != r2.Len() {
		t.Errorf("index after the refused update: %v", err)
	}
}

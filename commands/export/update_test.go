package exportcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/toolindex"
)

// TestUpdate exports an index of a dataset, edits the dataset (a tool changed, one removed,
// one added) and brings the index up to date with -update.
func TestUpdate(t *testing.T) {
	tmp := t.TempDir()
	_, run := testRun(t, tmp)
	// A copy of the default dataset's corpus, edited after the export.
	src := "../../data/default"
	ddir := filepath.Join(tmp, "data")
	if err := os.CopyFS(ddir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "index")
	if _, err := runExport(run, "index", out, false, ddir, "go"); err != nil {
		t.Fatal(err)
	}
	msg, err := runUpdate("", "index", out, false, ddir, "go")
	if err != nil || !strings.Contains(msg, "0 added, 0 changed, 0 deleted") {
		t.Fatalf("update without changes: %q, %v", msg, err)
	}
	corpus := filepath.Join(ddir, "corpus.jsonl")
	b, err := os.ReadFile(corpus)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(b)), "\n")
	var changed map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &changed); err != nil {
		t.Fatal(err)
	}
	changed["text"] = "Changed: " + changed["text"].(string)
	cb, _ := json.Marshal(changed)
	lines[1] = string(cb) + "\n"
	// Remove a tool whose scenes keep other tools.
	sb, err := os.ReadFile(filepath.Join(ddir, "scene_tool.txt"))
	if err != nil {
		t.Fatal(err)
	}
	perScene, scenesOf := map[string]int{}, map[string][]string{}
	for _, l := range strings.Split(string(sb), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			perScene[f[0]]++
			scenesOf[f[1]] = append(scenesOf[f[1]], f[0])
		}
	}
	var gone struct {
		ID string `json:"_id"`
	}
	drop := -1
	for i := 2; i < len(lines) && drop < 0; i++ {
		if err := json.Unmarshal([]byte(lines[i]), &gone); err != nil {
			t.Fatal(err)
		}
		drop = i
		for _, sc := range scenesOf[gone.ID] {
			if perScene[sc] < 2 {
				drop = -1
			}
		}
	}
	if drop < 0 {
		t.Fatal("no tool can be removed")
	}
	lines = append(lines[:drop], lines[drop+1:]...)
	// The removed tool's judgments and scene go too.
	for _, f := range []string{"qrels/test.tsv", "qrels/train.tsv", "scene_tool.txt"} {
		p := filepath.Join(ddir, f)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, l := range strings.SplitAfter(string(b), "\n") {
			if fields := strings.Fields(l); len(fields) < 2 || fields[1] != gone.ID {
				keep = append(keep, l)
			}
		}
		os.WriteFile(p, []byte(strings.Join(keep, "")), 0o644)
	}
	lines = append(lines, "\n"+`{"_id": "brand-new-tool", "title": "", "text": "category_name:Travel, tool_name:Trains, api_name:Book, api_description:Book a train ticket", "metadata": {}}`+"\n")
	if err := os.WriteFile(corpus, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := data.Load(ddir)
	if err != nil {
		t.Fatal(err)
	}
	msg, err = runUpdate("", "index", out, false, ddir, "go")
	if err != nil || !strings.Contains(msg, "1 added, 1 changed, 1 deleted") {
		t.Fatalf("update: %q, %v", msg, err)
	}
	r, err := toolindex.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != len(d.Tools) || r.Manifest().DataFingerprint != d.Fingerprint() {
		t.Fatalf("%d tools (want %d), fingerprint %s (want %s)", r.Len(), len(d.Tools), r.Manifest().DataFingerprint, d.Fingerprint())
	}
	for _, want := range export.ToolRecords(d) {
		i, ok := r.Library().Lookup(want.ID)
		if !ok || r.Library().Tool(i) != want {
			t.Fatalf("tool %s: %v %+v", want.ID, ok, want)
		}
	}
	for _, tc := range []struct {
		run, format string
		force       bool
		out, want   string
	}{
		{"", "hf", false, out, "give -format index"},
		{run, "index", false, out, "takes no -run"},
		{"", "index", true, out, "-force does not apply"},
		{"", "index", false, "", "-out"},
		{"", "index", false, filepath.Join(tmp, "nothing"), "no such file"},
	} {
		if _, err := runUpdate(tc.run, tc.format, tc.out, tc.force, ddir, "go"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("runUpdate(%q, %q, %q, %v): %v, want %q", tc.run, tc.format, tc.out, tc.force, err, tc.want)
		}
	}
}

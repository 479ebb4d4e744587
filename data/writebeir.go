package data

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolret/toolret/internal/atomicfile"
)

// WriteBEIR writes d in the BEIR layout into dir (created if needed): corpus.jsonl,
// queries.jsonl, qrels/<split>.tsv and, when the dataset has scenes, scene_tool.txt and
// query_scene_<split>.txt, and HoldoutFile for a held-out-tool view. Files are written
// atomically.
func WriteBEIR(d *Dataset, dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		return err
	}
	var corpus, queries strings.Builder
	for _, t := range d.Tools {
		b, err := json.Marshal(map[string]any{"_id": t.ID, "title": t.Title, "text": t.Text, "metadata": orEmpty(t.Metadata)})
		if err != nil {
			return fmt.Errorf("tool %q: %w", t.ID, err)
		}
		corpus.Write(b)
		corpus.WriteByte('\n')
	}
	for _, q := range d.Queries {
		b, _ := json.Marshal(map[string]any{"_id": q.ID, "text": q.Text, "metadata": map[string]any{}})
		queries.Write(b)
		queries.WriteByte('\n')
	}
	files := map[string]string{"corpus.jsonl": corpus.String(), "queries.jsonl": queries.String()}
	for _, name := range d.SplitNames() {
		s := d.Splits[name]
		var q, qs strings.Builder
		q.WriteString("query-id\tcorpus-id\tscore\n")
		for _, qi := range s.Queries {
			for _, t := range s.Relevant[qi] {
				fmt.Fprintf(&q, "%s\t%s\t1\n", d.Queries[qi].ID, d.Tools[t].ID)
			}
			if len(s.Relevant[qi]) == 0 {
				fmt.Fprintf(&q, "%s\t%s\t0\n", d.Queries[qi].ID, d.Tools[0].ID)
			}
			if sc, ok := s.Scene[qi]; ok {
				fmt.Fprintf(&qs, "%s\t%s\n", d.Queries[qi].ID, d.SceneIDs[sc])
			}
		}
		files[filepath.Join("qrels", name+".tsv")] = q.String()
		if qs.Len() > 0 {
			files["query_scene_"+name+".txt"] = qs.String()
		}
	}
	if len(d.Scenes) > 0 {
		var st strings.Builder
		for i, sc := range d.Scenes {
			for _, t := range sc {
				fmt.Fprintf(&st, "%s\t%s\n", d.SceneIDs[i], d.Tools[t].ID)
			}
		}
		files["scene_tool.txt"] = st.String()
	}
	for name, content := range files {
		if err := atomicfile.Write(filepath.Join(dir, name), []byte(content)); err != nil {
			return err
		}
	}
	return writeHoldout(d, dir)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

package data

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// Parquet layout: one file per table, with the BEIR columns.
//
//	tools.parquet                 id, title, text, metadata (JSON object as a string)
//	queries.parquet               id, text, metadata
//	qrels_<split>.parquet         query_id, tool_id, score
//	scene_tool.parquet            scene_id, tool_id            (optional)
//	query_scene_<split>.parquet   query_id, scene_id           (optional)

type docRow struct {
	ID       string `parquet:"id"`
	Title    string `parquet:"title"`
	Text     string `parquet:"text"`
	Metadata string `parquet:"metadata"`
}

type qrelRow struct {
	QueryID string  `parquet:"query_id"`
	ToolID  string  `parquet:"tool_id"`
	Score   float64 `parquet:"score"`
}

type sceneToolRow struct {
	SceneID string `parquet:"scene_id"`
	ToolID  string `parquet:"tool_id"`
}

type querySceneRow struct {
	QueryID string `parquet:"query_id"`
	SceneID string `parquet:"scene_id"`
}

func readParquet[T any](file string) ([]T, error) {
	rows, err := parquet.ReadFile[T](file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return rows, nil
}

// LoadParquet reads a dataset written by WriteParquet (or any files with the same columns).
// Errors name the file and the 1-based row.
func LoadParquet(dir string) (*Dataset, error) {
	b := newBuilder(filepath.Base(filepath.Clean(dir)))
	for _, tbl := range []struct {
		file string
		add  func(string, int, jsonRecord, string) error
	}{{"tools.parquet", b.addTool}, {"queries.parquet", b.addQuery}} {
		file := filepath.Join(dir, tbl.file)
		rows, err := readParquet[docRow](file)
		if err != nil {
			return nil, err
		}
		for i, r := range rows {
			at := fmt.Sprintf("%s row %d", file, i+1)
			if strings.TrimSpace(r.ID) == "" {
				return nil, fmt.Errorf("%s: empty id", at)
			}
			if strings.TrimSpace(r.Text) == "" {
				return nil, fmt.Errorf("%s: id %q: empty text", at, r.ID)
			}
			rec := jsonRecord{Title: r.Title, Text: &rows[i].Text}
			if r.Metadata != "" {
				if err := json.Unmarshal([]byte(r.Metadata), &rec.Metadata); err != nil {
					return nil, fmt.Errorf("%s: metadata: malformed JSON: %w", at, err)
				}
			}
			if err := tbl.add(file, i+1, rec, r.ID); err != nil {
				return nil, fmt.Errorf("%s", strings.Replace(err.Error(), fmt.Sprintf("%s:%d", file, i+1), at, 1))
			}
		}
	}
	splits, err := filepath.Glob(filepath.Join(dir, "qrels_*.parquet"))
	if err != nil {
		return nil, err
	}
	if len(splits) == 0 {
		return nil, fmt.Errorf("dataset %s: no qrels_<split>.parquet files", dir)
	}
	sort.Strings(splits)
	var names []string
	for _, file := range splits {
		split := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "qrels_"), ".parquet")
		names = append(names, split)
		b.split(split)
		rows, err := readParquet[qrelRow](file)
		if err != nil {
			return nil, err
		}
		for i, r := range rows {
			if err := b.addJudgement(split, fmt.Sprintf("%s row %d", file, i+1), r.QueryID, r.ToolID, r.Score); err != nil {
				return nil, err
			}
		}
	}
	sceneFile := filepath.Join(dir, "scene_tool.parquet")
	if _, err := os.Stat(sceneFile); err == nil {
		rows, err := readParquet[sceneToolRow](sceneFile)
		if err != nil {
			return nil, err
		}
		for i, r := range rows {
			if err := b.addSceneJudgement(fmt.Sprintf("%s row %d", sceneFile, i+1), r.SceneID, r.ToolID); err != nil {
				return nil, err
			}
		}
		for _, split := range names {
			file := filepath.Join(dir, "query_scene_"+split+".parquet")
			if _, err := os.Stat(file); err != nil {
				continue
			}
			rows, err := readParquet[querySceneRow](file)
			if err != nil {
				return nil, err
			}
			for i, r := range rows {
				if err := b.addQuerySceneJudgement(split, fmt.Sprintf("%s row %d", file, i+1), r.QueryID, r.SceneID); err != nil {
					return nil, err
				}
			}
		}
	}
	return b.finish()
}

// WriteParquet writes d in the Parquet layout into dir (created if needed). Scenes are
// written only when the dataset has them.
func WriteParquet(d *Dataset, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	docs := func(n int, get func(int) (id, title, text string, meta map[string]any)) ([]docRow, error) {
		rows := make([]docRow, n)
		for i := range rows {
			id, title, text, meta := get(i)
			rows[i] = docRow{ID: id, Title: title, Text: text}
			if meta != nil {
				b, err := json.Marshal(meta)
				if err != nil {
					return nil, fmt.Errorf("id %q: metadata: %w", id, err)
				}
				rows[i].Metadata = string(b)
			}
		}
		return rows, nil
	}
	tools, err := docs(len(d.Tools), func(i int) (string, string, string, map[string]any) {
		t := d.Tools[i]
		return t.ID, t.Title, t.Text, t.Metadata
	})
	if err != nil {
		return err
	}
	queries, err := docs(len(d.Queries), func(i int) (string, string, string, map[string]any) {
		return d.Queries[i].ID, "", d.Queries[i].Text, nil
	})
	if err != nil {
		return err
	}
	if err := writeParquet(filepath.Join(dir, "tools.parquet"), tools); err != nil {
		return err
	}
	if err := writeParquet(filepath.Join(dir, "queries.parquet"), queries); err != nil {
		return err
	}
	for _, name := range d.SplitNames() {
		s := d.Splits[name]
		var rows []qrelRow
		for _, q := range s.Queries {
			for _, t := range s.Relevant[q] {
				rows = append(rows, qrelRow{d.Queries[q].ID, d.Tools[t].ID, 1})
			}
			if len(s.Relevant[q]) == 0 {
				rows = append(rows, qrelRow{d.Queries[q].ID, d.Tools[0].ID, 0})
			}
		}
		if err := writeParquet(filepath.Join(dir, "qrels_"+name+".parquet"), rows); err != nil {
			return err
		}
		if len(s.Scene) > 0 {
			var qs []querySceneRow
			for _, q := range s.Queries {
				if sc, ok := s.Scene[q]; ok {
					qs = append(qs, querySceneRow{d.Queries[q].ID, d.SceneIDs[sc]})
				}
			}
			if err := writeParquet(filepath.Join(dir, "query_scene_"+name+".parquet"), qs); err != nil {
				return err
			}
		}
	}
	if len(d.Scenes) > 0 {
		var rows []sceneToolRow
		for i, sc := range d.Scenes {
			for _, t := range sc {
				rows = append(rows, sceneToolRow{d.SceneIDs[i], d.Tools[t].ID})
			}
		}
		if err := writeParquet(filepath.Join(dir, "scene_tool.parquet"), rows); err != nil {
			return err
		}
	}
	return writeHoldout(d, dir)
}

// writeParquet writes rows atomically (temporary file + rename).
func writeParquet[T any](file string, rows []T) error {
	tmp := file + ".tmp"
	if err := parquet.WriteFile(tmp, rows); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

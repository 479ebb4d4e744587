package data

import (
	"strings"
	"testing"
)

// Each fuzz target replaces one file of a valid dataset with arbitrary bytes: loading must
// return a dataset or an error, never panic, and any error must name the file it came from
// (or the dataset, for whole-dataset checks).
func fuzzFile(f *testing.F, file string, seeds ...string) {
	f.Add(goodFiles[file])
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		over := map[string]string{file: content}
		if content == "" {
			over[file] = "\n"
		}
		d, err := LoadFS(fsWith(over), "d", "fuzz")
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "d/") && !strings.Contains(msg, "dataset fuzz") {
				t.Fatalf("error names no file: %v", err)
			}
			return
		}
		for _, s := range d.Splits {
			for q, rel := range s.Relevant {
				if q < 0 || q >= len(d.Queries) {
					t.Fatalf("query index %d out of range", q)
				}
				for _, tl := range rel {
					if tl < 0 || tl >= len(d.Tools) {
						t.Fatalf("tool index %d out of range", tl)
					}
				}
			}
		}
	})
}

func FuzzLoadCorpus(f *testing.F) {
	fuzzFile(f, "corpus.jsonl", `{"_id":"0","text":"x","metadata":{"category_name":1}}`, `{"_id":1e3,"text":"y"}`, "{\"_id\":\"0\",\"text\":\"category_name:, tool_name:, api_name:\"}\n", "\xff\xfe")
}

func FuzzLoadQueries(f *testing.F) {
	fuzzFile(f, "queries.jsonl", `{"_id":"0","text":"a"}`+"\n"+`{"_id":"1","text":"b"}`+"\n"+`{"_id":"2","text":"c"}`, `[]`, `{"_id":null}`)
}

func FuzzLoadQrels(f *testing.F) {
	fuzzFile(f, "qrels/train.tsv", "0\t0\t1\n", "query-id\tcorpus-id\tscore\n0 1 2\n", "0\t0\tNaN\n", "0\t0\n1\t1\t-1\n")
}

func FuzzLoadScenes(f *testing.F) {
	f.Add("s0\t0\ns0\t1\n", "0\ts0\n")
	f.Add("scene-id tool-id\n1 2\n", "query-id scene-id\n0 1\n")
	f.Fuzz(func(t *testing.T, scenes, queryScenes string) {
		_, err := LoadFS(fsWith(map[string]string{"scene_tool.txt": scenes + "\n", "query_scene_train.txt": queryScenes + "\n"}), "d", "fuzz")
		if err != nil && !strings.Contains(err.Error(), "d/") && !strings.Contains(err.Error(), "dataset fuzz") {
			t.Fatalf("error names no file: %v", err)
		}
	})
}

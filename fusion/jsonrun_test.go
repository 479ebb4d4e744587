package fusion

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestJSONRunRoundTrip writes ids with white space (toolmix's) to a .json path and reads
// them back exactly; the file is plain JSON (what ranx's Run.from_file reads): a query-id
// object of document-id objects of scores.
func TestJSONRunRoundTrip(t *testing.T) {
	want := []Result{
		{Query: "toollens:15189", Docs: []string{"toolmix:gorilla_apizoo/Zoom_API/Zoom Phone API - Setting Templates: getSettingTemplate", "t\"2", "t3"}, Scores: []float32{0.912345, 0.5, 0.5}},
		{Query: "q 2", Docs: []string{"a"}, Scores: []float32{-1e-7}},
		{Query: "q3"},
	}
	path := filepath.Join(t.TempDir(), "run.json")
	if err := WriteRunFile(path, "ignored-tag", want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRunFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if len(want[i].Docs) == 0 {
			want[i].Docs, want[i].Scores = nil, nil
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]map[string]float64
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not plain JSON: %v\n%s", err, b)
	}
	if len(m) != 3 || float32(m["q 2"]["a"]) != float32(-1e-7) || len(m["q3"]) != 0 {
		t.Errorf("as JSON: %v", m)
	}
}

// TestReadJSONRunOrder orders each query's documents by score, ties in file order, as ranx
// does whatever order the file lists them in.
func TestReadJSONRunOrder(t *testing.T) {
	in := `{"q": {"low": 1, "tie1": 5, "high": 9.5, "tie2": 5}, "p": {"x": 1e400}}`
	got, err := ReadJSONRun(strings.NewReader(in), "in.json")
	if err != nil {
		t.Fatal(err)
	}
	if d := got[0].Docs; !reflect.DeepEqual(d, []string{"high", "tie1", "tie2", "low"}) {
		t.Errorf("order %v", d)
	}
	if got[1].Query != "p" || got[1].Scores[0] < 3e38 {
		t.Errorf("a score beyond float32 reads as +Inf: %+v", got[1])
	}
}

func TestReadJSONRunErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"not an object", `["q"]`, "in.json:1: the run: want an object"},
		{"query not an object", `{"q": [1]}`, `query "q": want an object`},
		{"string score", "{\"q\": {\"a\": 1,\n \"b\": \"2\"}}", `in.json:2: query "q": document "b": score 2: want a number`},
		{"nested score", `{"q": {"a": {}}}`, `document "a": score {: want a number`},
		{"query twice", "{\"q\": {},\n\"q\": {}}", `in.json:2: query "q" again`},
		{"document twice", `{"q": {"a": 1, "a": 2}}`, `query "q": document "a" again`},
		{"empty query id", `{"": {}}`, "an empty query id"},
		{"empty document id", `{"q": {"": 1}}`, `query "q": an empty document id`},
		{"truncated", "{\"q\": {\"a\": 1,\n", "unexpected end of JSON input"},
		{"empty", ``, "in.json:1: unexpected EOF"},
		{"trailing data", `{} {}`, "data after the run's object"},
		{"bad syntax", `{"q": {"a" 1}}`, "in.json:1: invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadJSONRun(strings.NewReader(tc.in), "in.json")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestWriteRunFileErrors: a bad run is refused and nothing is written; a TREC path given an
// id with white space is told to use a .json path.
func TestWriteRunFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		res        []Result
		want       string
	}{
		{"trec white space", "run.trec", []Result{{Query: "q", Docs: []string{"a b"}, Scores: []float32{1}}}, "name the file *.json"},
		{"json scores rise", "run.json", []Result{{Query: "q", Docs: []string{"a", "b"}, Scores: []float32{1, 2}}}, "readers order by score"},
		{"json query twice", "run.json", []Result{{Query: "q"}, {Query: "q"}}, `query "q" twice`},
		{"json document twice", "run.json", []Result{{Query: "q", Docs: []string{"a", "a"}, Scores: []float32{2, 1}}}, `document "a" twice`},
		{"json empty document", "run.json", []Result{{Query: "q", Docs: []string{""}, Scores: []float32{1}}}, "empty document id"},
		{"json infinite score", "run.json", []Result{{Query: "q", Docs: []string{"a"}, Scores: []float32{float32(math.Inf(1))}}}, "want a finite number"},
		{"json scores missing", "run.json", []Result{{Query: "q", Docs: []string{"a"}}}, "0 scores for 1 documents"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			err := WriteRunFile(path, "tag", tc.res)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v, want it to name %s and contain %q", err, path, tc.want)
			}
			if _, serr := os.Stat(path); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("%s written after an error (%v)", path, serr)
			}
		})
	}
	var b bytes.Buffer
	if err := WriteJSONRun(&b, []Result{{Query: ""}}); err == nil {
		t.Error("an empty query id written")
	}
}

// FuzzReadJSONRun: any input is read or refused with an error, never a panic; what is read
// writes back as a JSON run that reads again to the same results (make fuzz).
func FuzzReadJSONRun(f *testing.F) {
	for _, s := range []string{`{"q": {"a b": 1, "c": 2}}`, `{}`, `{"q": {}}`, `{"q": {"a": 1e400}}`, `[1]`, `{"q": {"a": "1"}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		res, err := ReadJSONRun(strings.NewReader(in), "in.json")
		if err != nil {
			return
		}
		for i := range res {
			for j, s := range res[i].Scores {
				if math.IsInf(float64(s), 0) {
					res[i].Scores[j] = 0 // a score beyond float32 reads as ±Inf, which JSON cannot write
				}
			}
			sort.Stable(byScore(res[i]))
		}
		var b bytes.Buffer
		if err := WriteJSONRun(&b, res); err != nil {
			t.Fatalf("read %q, could not write it back: %v", in, err)
		}
		again, err := ReadJSONRun(&b, "again.json")
		if err != nil {
			t.Fatalf("wrote %q, could not read it back: %v", b.String(), err)
		}
		if len(again) != len(res) {
			t.Fatalf("%d results read back, want %d", len(again), len(res))
		}
		for i := range res {
			if !slices.Equal(again[i].Docs, res[i].Docs) || !slices.Equal(again[i].Scores, res[i].Scores) {
				t.Fatalf("read back %+v, want %+v", again[i], res[i])
			}
		}
	})
}

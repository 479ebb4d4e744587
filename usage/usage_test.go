package usage

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolret/toolret/data"
)

func decode(t *testing.T, log string) []Record {
	t.Helper()
	recs, warn, err := Decode(strings.NewReader(log), "usage.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(warn) > 0 {
		t.Fatalf("warnings: %q", warn)
	}
	return recs
}

// TestExamples: the rules of the package comment, one case each.
func TestExamples(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  string
		want []data.Example
	}{
		{"called tool positive, shown-not-called negatives", `
{"kind":"search","search_id":"s1","query":"echo it","shown":["a","b","c"]}
{"kind":"call","search_id":"s1","tool":"b","outcome":"ok"}`,
			[]data.Example{{Query: "echo it", Positives: []string{"b"}, Negatives: []string{"a", "c"}, Source: "usage"}}},
		{"failed call neither positive nor negative", `
{"kind":"search","search_id":"s1","query":"q","shown":["a","b","c"]}
{"kind":"call","search_id":"s1","tool":"a","outcome":"invalid_arguments"}
{"kind":"call","search_id":"s1","tool":"b","outcome":"ok"}`,
			[]data.Example{{Query: "q", Positives: []string{"b"}, Negatives: []string{"c"}, Source: "usage"}}},
		{"only failed calls: no example", `
{"kind":"search","search_id":"s1","query":"q","shown":["a","b"]}
{"kind":"call","search_id":"s1","tool":"a","outcome":"tool_error"}`, nil},
		{"search without a call: no example", `
{"kind":"search","search_id":"s1","query":"q","shown":["a","b"]}`, nil},
		{"positive feedback is a positive", `
{"kind":"search","search_id":"s1","query":"q","shown":["a","b"]}
{"kind":"feedback","search_id":"s1","tool":"b","outcome":"success"}`,
			[]data.Example{{Query: "q", Positives: []string{"b"}, Negatives: []string{"a"}, Source: "usage"}}},
		{"reported failure overrides an ok call and is a negative", `
{"kind":"search","search_id":"s1","query":"q","shown":["a","b","c"]}
{"kind":"call","search_id":"s1","tool":"a","outcome":"ok"}
{"kind":"feedback","search_id":"s1","tool":"a","outcome":"failure"}
{"kind":"call","search_id":"s1","tool":"c","outcome":"ok"}`,
			[]data.Example{{Query: "q", Positives: []string{"c"}, Negatives: []string{"a", "b"}, Source: "usage"}}},
		{"calls joined by search id, not by order", `
{"kind":"search","search_id":"s1","query":"first","shown":["a","b"]}
{"kind":"search","search_id":"s2","query":"second","shown":["b","a"]}
{"kind":"call","search_id":"s2","tool":"a","outcome":"ok"}
{"kind":"call","search_id":"s1","tool":"b","outcome":"ok"}`,
			[]data.Example{{Query: "first", Positives: []string{"b"}, Negatives: []string{"a"}, Source: "usage"},
				{Query: "second", Positives: []string{"a"}, Negatives: []string{"b"}, Source: "usage"}}},
		{"unjoined call ignored", `
{"kind":"search","search_id":"s1","query":"q","shown":["a"]}
{"kind":"call","search_id":"nope","tool":"a","outcome":"ok"}
{"kind":"call","tool":"a","outcome":"ok"}`, nil},
		{"same query merged: union, positive beats negative", `
{"kind":"search","search_id":"s1","query":"Echo  it","shown":["a","b","c"]}
{"kind":"call","search_id":"s1","tool":"a","outcome":"ok"}
{"kind":"search","search_id":"s2","query":"echo it","shown":["b","a","d"]}
{"kind":"call","search_id":"s2","tool":"b","outcome":"ok"}
{"kind":"call","search_id":"s2","tool":"b","outcome":"ok"}`,
			[]data.Example{{Query: "Echo  it", Positives: []string{"a", "b"}, Negatives: []string{"c", "d"}, Source: "usage"}}},
		{"feedback with a query and no search", `
{"kind":"feedback","query":"remember Ada","tool":"memory.create","outcome":"success"}`,
			[]data.Example{{Query: "remember Ada", Positives: []string{"memory.create"}, Source: "usage"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, st := Examples(decode(t, tc.log))
			if len(got) == 0 && len(tc.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v (stats %s)", got, tc.want, st)
			}
		})
	}
}

func TestExamplesStats(t *testing.T) {
	_, st := Examples(decode(t, `
{"kind":"search","search_id":"s1","query":"q","shown":["a","b"]}
{"kind":"call","search_id":"s1","tool":"a","outcome":"ok"}
{"kind":"call","search_id":"s1","tool":"b","outcome":"tool_error"}
{"kind":"search","search_id":"s2","query":"r","shown":["a"]}
{"kind":"call","search_id":"zz","tool":"a","outcome":"ok"}
{"kind":"feedback","search_id":"s2","tool":"a","outcome":"failure"}`))
	want := Stats{Searches: 2, Calls: 3, Feedback: 1, Positives: 1, FailedCalls: 1, Failures: 1, Unjoined: 1, Unanswered: 1, Examples: 1}
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
}

// TestDecodeErrors: malformed lines are named by file:line; a torn last line is skipped.
func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, log, err string
	}{
		{"malformed JSON", "{\"kind\":\"search\",\"search_id\":\"a\",\"query\":\"q\"}\n{oops\n", "usage.jsonl:2: malformed usage record"},
		{"unknown kind", "\n{\"kind\":\"poke\"}\n", `usage.jsonl:2: usage record of unknown kind "poke"`},
		{"search without id", "{\"kind\":\"search\",\"query\":\"q\"}\n", `usage.jsonl:1: a search record needs "search_id" and "query"`},
		{"call without tool", "{\"kind\":\"call\",\"search_id\":\"a\"}\n", `usage.jsonl:1: a call record needs "tool"`},
		{"malformed line then more", "{\"kind\":\"call\",\"tool\":\"a\"}\n{\"kind\":\n{\"kind\":\"call\",\"tool\":\"a\"}", "usage.jsonl:2:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Decode(strings.NewReader(tc.log), "usage.jsonl")
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want it to contain %q", err, tc.err)
			}
		})
	}
	recs, warn, err := Decode(strings.NewReader("{\"kind\":\"call\",\"tool\":\"a\"}\n{\"kind\":\"sea"), "usage.jsonl")
	if err != nil || len(recs) != 1 || len(warn) != 1 || !strings.Contains(warn[0], "usage.jsonl:2: torn last record") {
		t.Errorf("torn last line: %d records, warnings %q, error %v", len(recs), warn, err)
	}
}

// TestReadExamplesIntoDataset: a log on disk becomes a training split of a dataset, with
// its negatives as hard negatives; a tool the library no longer has is dropped.
func TestReadExamplesIntoDataset(t *testing.T) {
	p := filepath.Join(t.TempDir(), "usage.jsonl")
	log := `{"kind":"search","search_id":"s1","query":"q1","shown":["a","b","gone"]}
{"kind":"call","search_id":"s1","tool":"a","outcome":"ok"}
{"kind":"search","search_id":"s2","query":"q2","shown":["gone","b"]}
{"kind":"call","search_id":"s2","tool":"gone","outcome":"ok"}
`
	if err := os.WriteFile(p, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	ex, _, st, err := ReadExamples(p)
	if err != nil || st.Examples != 2 {
		t.Fatalf("%d examples (%s), error %v", len(ex), st, err)
	}
	d := &data.Dataset{Name: "lib", Tools: []data.Tool{{ID: "a", Text: "A"}, {ID: "b", Text: "B"}},
		ToolIndex: map[string]int{"a": 0, "b": 1}, QueryIndex: map[string]int{}, Splits: map[string]*data.Split{}}
	v, negs, skipped, err := d.WithExamples(ex)
	if err != nil {
		t.Fatal(err)
	}
	tr := v.Splits["train"]
	if len(tr.Queries) != 1 || v.Queries[tr.Queries[0]].Text != "q1" || !reflect.DeepEqual(tr.Relevant[tr.Queries[0]], []int{0}) ||
		!reflect.DeepEqual(negs[tr.Queries[0]], []int{1}) || len(skipped) != 2 {
		t.Errorf("train %+v, queries %+v, negatives %v, skipped %q", tr, v.Queries, negs, skipped)
	}
	if len(d.Queries) != 0 || len(d.Splits) != 0 {
		t.Error("WithExamples modified its dataset")
	}
}

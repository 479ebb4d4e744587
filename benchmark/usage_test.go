package benchmark

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/toolret/toolret/data"
)

// TestUsageData: the early and later splits partition the view's test queries, the library
// file gives the dataset's tool texts, and a re-run gives the same split.
func TestUsageData(t *testing.T) {
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	h := &data.Holdout{Fraction: 0.2, Seed: 1}
	v, err := d.HoldoutTools(h.Fraction, h.Seed)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	early, later, err := UsageData(d, h, 0.5, 1, out)
	if err != nil {
		t.Fatal(err)
	}
	if early+later != len(v.Splits["test"].Queries) || early == 0 || later < early {
		t.Errorf("%d early + %d later, want the %d test queries, later >= early (floor per tool)", early, later, len(v.Splits["test"].Queries))
	}
	sim, err := data.Open(filepath.Join(out, "data"), nil)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := data.LoadLibrary(filepath.Join(out, "tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i, tool := range d.Tools {
		if lib.Tools[i].ID != tool.ID || lib.Tools[i].Text != tool.Text || sim.Tools[i].Text != tool.Text {
			t.Fatalf("tool %d: library %q %q, want %q %q", i, lib.Tools[i].ID, lib.Tools[i].Text, tool.ID, tool.Text)
		}
	}
	out2 := t.TempDir()
	if _, _, err := UsageData(d, h, 0.5, 1, out2); err != nil {
		t.Fatal(err)
	}
	sim2, err := data.Open(filepath.Join(out2, "data"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if sim.Fingerprint() != sim2.Fingerprint() {
		t.Error("the same seed gave another split")
	}
	if _, _, err := UsageData(d, h, 1, 1, t.TempDir()); err == nil {
		t.Error("-used 1 accepted")
	}
}

// TestAgent: the agent reports exactly the relevant tools among those shown, with the
// search's id, and nothing for a query whose tools were not shown.
func TestAgent(t *testing.T) {
	d := &data.Dataset{Name: "t", Tools: []data.Tool{{ID: "a"}, {ID: "b"}, {ID: "c"}}, ToolIndex: map[string]int{"a": 0, "b": 1, "c": 2},
		Queries: []data.Query{{ID: "q1", Text: "one"}, {ID: "q2", Text: "two"}}, QueryIndex: map[string]int{"q1": 0, "q2": 1},
		Splits: map[string]*data.Split{"early": {Name: "early", Queries: []int{0, 1}, Relevant: map[int][]int{0: {1, 2}, 1: {2}}}}}
	var mu sync.Mutex
	var reports []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		json.NewDecoder(r.Body).Decode(&in)
		switch r.URL.Path {
		case "/v1/search":
			fmt.Fprintf(w, `{"search_id": "s-%s", "tools": [{"name": "a"}, {"name": "b"}]}`, in["query"])
		case "/v1/feedback":
			mu.Lock()
			reports = append(reports, fmt.Sprintf("%s@%s:%v", in["name"], in["search_id"], in["success"]))
			mu.Unlock()
			w.Write([]byte(`{}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	st, err := Agent(context.Background(), srv.URL, "", d, "early", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0] != "b@s-one:true" || st.Queries != 2 || st.Found != 1 || st.Reports != 1 || st.Recall != 0.25 {
		t.Errorf("reports %q, stats %+v", reports, st)
	}
}

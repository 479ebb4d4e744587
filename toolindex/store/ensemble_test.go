package store

import (
	"context"
	"strings"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/toolindex"
)

// TestEnsembleStore: a store over an ensemble refuses added tools, takes a deletion, compacts
// it into the index at Close, and opens again with the same member, which still holds the
// deleted tool; the tool never comes back in an answer.
func TestEnsembleStore(t *testing.T) {
	dir, member := newIndex(t), newIndex(t)
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	opts := []toolindex.Option{toolindex.WithBackend(be), toolindex.WithEnsemble("rrf", []string{member}, nil)}
	st, err := Open(dir, 0, opts...)
	if err != nil {
		t.Fatal(err)
	}
	n := st.R.Len()
	if _, _, err := st.Update([]export.ToolRecord{tool("new", "New tool")}, nil); err == nil || !strings.Contains(err.Error(), "ensemble index") {
		t.Errorf("adding a tool to an ensemble: %v", err)
	}
	gone := st.R.Library().Tool(0).ID
	if _, _, err := st.Update(nil, []string{gone}); err != nil {
		t.Fatalf("deleting %s: %v", gone, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st2, err := Open(dir, 0, opts...)
	if err != nil {
		t.Fatalf("reopening the ensemble after a compacted deletion: %v", err)
	}
	defer st2.Close()
	if st2.R.Len() != n-1 || st2.Pending() != 0 {
		t.Fatalf("reopened: %d tools (want %d), %d pending", st2.R.Len(), n-1, st2.Pending())
	}
	res, err := st2.R.Retrieve(context.Background(), "weather forecast", n-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != n-1 {
		t.Errorf("%d results, want every remaining tool (%d)", len(res), n-1)
	}
	for _, x := range res {
		if x.ToolID == gone {
			t.Errorf("deleted tool %s answered", gone)
		}
	}
}

// Package toolindextest holds test helpers shared by the packages that keep a toolindex
// library (toolindex/store, serve): a library's contents by tool id and their comparison.
package toolindextest

import (
	"fmt"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/toolindex"
)

// Entry is one tool of a library: its record and its embedding.
type Entry struct {
	Rec export.ToolRecord
	Emb []float32
}

// Snapshot is what a library holds, by tool id.
type Snapshot map[string]Entry

// Snap returns what l holds.
func Snap(l *toolindex.Library) Snapshot {
	s := Snapshot{}
	for i := 0; i < l.Len(); i++ {
		s[l.Tool(i).ID] = Entry{l.Tool(i), l.Embedding(i)}
	}
	return s
}

// Same reports how got differs from want (records and embeddings bit for bit), or nil.
func Same(got, want Snapshot) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d tools, want %d", len(got), len(want))
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			return fmt.Errorf("tool %q missing", id)
		}
		if g.Rec != w.Rec {
			return fmt.Errorf("tool %q: %+v, want %+v", id, g.Rec, w.Rec)
		}
		if len(g.Emb) != len(w.Emb) {
			return fmt.Errorf("tool %q: embedding of %d values, want %d", id, len(g.Emb), len(w.Emb))
		}
		for j := range w.Emb {
			if g.Emb[j] != w.Emb[j] {
				return fmt.Errorf("tool %q: embedding differs at %d", id, j)
			}
		}
	}
	return nil
}

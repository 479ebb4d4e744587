package library

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Changes is what changed between two libraries, as tool IDs in the order of the library
// they are found in (Added and Changed: the new one; Removed: the old one).
type Changes struct {
	Added, Changed, Removed []string
	// Unchanged counts the tools present and equal in both.
	Unchanged int
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool {
	return len(c.Added) == 0 && len(c.Changed) == 0 && len(c.Removed) == 0
}

// String summarises c: "3 added, 1 changed, 0 removed, 20 unchanged".
func (c Changes) String() string {
	return fmt.Sprintf("%d added, %d changed, %d removed, %d unchanged", len(c.Added), len(c.Changed), len(c.Removed), c.Unchanged)
}

// Diff compares libraries old and new (either may be nil) tool by tool, by ID. A tool has
// changed when any of its fields differs (schemas compared as JSON values, so key order and
// spacing do not count).
func Diff(old, new *Library) Changes {
	var c Changes
	o := map[string]*Tool{}
	if old != nil {
		for i := range old.Tools {
			o[old.Tools[i].ID()] = &old.Tools[i]
		}
	}
	seen := map[string]bool{}
	if new != nil {
		for i := range new.Tools {
			t := &new.Tools[i]
			id := t.ID()
			seen[id] = true
			switch p, ok := o[id]; {
			case !ok:
				c.Added = append(c.Added, id)
			case Equal(*p, *t):
				c.Unchanged++
			default:
				c.Changed = append(c.Changed, id)
			}
		}
	}
	if old != nil {
		for _, t := range old.Tools {
			if !seen[t.ID()] {
				c.Removed = append(c.Removed, t.ID())
			}
		}
	}
	return c
}

// Equal reports whether tools a and b are the same definition; JSON fields are compared as
// JSON values.
func Equal(a, b Tool) bool {
	if !jsonEqual(a.InputSchema, b.InputSchema) || !jsonEqual(a.OutputSchema, b.OutputSchema) ||
		!jsonEqual(a.Annotations, b.Annotations) {
		return false
	}
	a.InputSchema, a.OutputSchema, a.Annotations = nil, nil, nil
	b.InputSchema, b.OutputSchema, b.Annotations = nil, nil, nil
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func jsonEqual(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}

// Group is the key of the set of tools one import produces: source kind and namespace.
func (t Tool) Group() string { return GroupOf(t.Source.Kind, t.Namespace) }

// GroupOf is the group (Tool.Group) of the tools of source kind in namespace.
func GroupOf(kind, namespace string) string { return kind + ":" + namespace }

// Merge returns old with the tools of every group (Tool.Group) an import covered replaced by
// imported's tools: tools of other groups are kept, in their order, then imported's tools
// follow in theirs. The groups covered are those of imported's tools and covered (a source
// that now has no tools). Its template is old's (imported's when old is nil). Re-importing a
// source thus adds, changes and removes that source's tools only.
func Merge(old, imported *Library, covered ...string) *Library {
	out := &Library{}
	groups := map[string]bool{}
	for _, g := range covered {
		groups[g] = true
	}
	if imported != nil {
		out.Template = imported.Template
		for _, t := range imported.Tools {
			groups[t.Group()] = true
		}
	}
	if old != nil {
		out.Template = old.Template
		for _, t := range old.Tools {
			if !groups[t.Group()] {
				out.Tools = append(out.Tools, t)
			}
		}
	}
	if imported != nil {
		out.Tools = append(out.Tools, imported.Tools...)
	}
	return out
}

// Summary lists up to max IDs of ids, then "… and N more".
func Summary(ids []string, max int) string {
	if len(ids) <= max {
		return strings.Join(ids, ", ")
	}
	return strings.Join(slices.Clip(ids[:max]), ", ") + fmt.Sprintf(", … and %d more", len(ids)-max)
}

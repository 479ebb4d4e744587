package data

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolret/toolret/library"
)

// IsLibraryFile reports whether p names a tool library file (library.Read): a regular file
// whose name ends in .jsonl.
func IsLibraryFile(p string) bool {
	if !strings.HasSuffix(p, ".jsonl") {
		return false
	}
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// LoadLibrary reads the tool library file at p (library.Read) as a dataset (FromLibrary)
// named after the file.
func LoadLibrary(p string) (*Dataset, error) {
	l, err := library.Read(p)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(filepath.Base(p), ".jsonl")
	d, err := FromLibrary(name, l)
	if err != nil {
		return nil, fmt.Errorf("library %s: %w", p, err)
	}
	return d, nil
}

// FromLibrary returns library l as a dataset with tools and no queries, splits or scenes: a
// tool's ID is library.Tool.ID, its title the ID too, its text the library's template
// applied to it (library.Library.Texts); its hierarchy is namespace → name (ToolName,
// APIName, also in its metadata as tool_name and api_name, beside the source kind).
func FromLibrary(name string, l *library.Library) (*Dataset, error) {
	if len(l.Tools) == 0 {
		return nil, fmt.Errorf("dataset %s: no tools", name)
	}
	texts, err := l.Texts()
	if err != nil {
		return nil, err
	}
	d := &Dataset{Name: name, ToolIndex: make(map[string]int, len(l.Tools)), QueryIndex: map[string]int{},
		Splits: map[string]*Split{}, Tools: make([]Tool, len(l.Tools))}
	for i, t := range l.Tools {
		id := t.ID()
		if _, dup := d.ToolIndex[id]; dup {
			return nil, fmt.Errorf("dataset %s: duplicate tool %q", name, id)
		}
		if strings.TrimSpace(texts[i]) == "" {
			return nil, fmt.Errorf("dataset %s: tool %q: the template gives an empty text", name, id)
		}
		d.ToolIndex[id] = i
		d.Tools[i] = Tool{ID: id, Title: id, Text: texts[i], ToolName: t.Namespace, APIName: t.Name,
			Metadata: map[string]any{"tool_name": t.Namespace, "api_name": t.Name, "source": t.Source.Kind}}
	}
	return d, nil
}

// ErrNoQueries is the error of asking a dataset with no queries (a tool library) for a
// split; it says what such a dataset is good for.
var ErrNoQueries = errors.New("it has tools and no queries or relevance judgements to train or evaluate on " +
	"(a tool library: index it with export -format index -data, or serve it)")

// HasQueries reports whether d has judged queries to train or evaluate on; a tool library
// (FromLibrary) has none.
func (d *Dataset) HasQueries() bool { return len(d.Queries) > 0 && len(d.Splits) > 0 }

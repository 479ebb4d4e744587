package toolret

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/library/importer"
)

// ImportLibrary imports the tools of MCP servers (their mcpServers configuration files),
// OpenAPI 3 descriptions and function-tool lists (importer.Sources) into the tool library
// file out (JSON Lines, written atomically): the tools of the sources imported replace
// theirs in an existing out, the others stay. It returns what changed and a report per
// source; a source that fails is named in the error and keeps its old tools.
//
// It is PrepareImport with the zero ImportOptions, then LibraryImport.Write.
func ImportLibrary(ctx context.Context, src importer.Sources, out string) (library.Changes, []importer.Report, error) {
	li, err := PrepareImport(ctx, src, out, ImportOptions{})
	if err != nil {
		return library.Changes{}, nil, fmt.Errorf("import: %w (not overwritten)", err)
	}
	if li.Library == nil {
		return library.Changes{}, li.Reports, li.Err
	}
	if err := li.Write(); err != nil {
		return li.Changes, li.Reports, errors.Join(li.Err, fmt.Errorf("import: %w", err))
	}
	return li.Changes, li.Reports, li.Err
}

// ImportOptions changes what PrepareImport makes of an existing library file; the zero value
// is ImportLibrary's.
type ImportOptions struct {
	// Template, when not empty, becomes the library's retrieval text template.
	Template string
	// Replace keeps only the tools imported now: an existing file's tools of other sources
	// are dropped (they count as removed).
	Replace bool
}

// LibraryImport is an import prepared for a library file: what would be written there and
// how it differs from what is there.
type LibraryImport struct {
	// Out is the library file.
	Out string
	// Library is the library to write, nil when no source was imported at all.
	Library *library.Library
	// Changes compares Library with the file's library (none when there is no file).
	Changes library.Changes
	// Reports has one report per source imported.
	Reports []importer.Report
	// Err names the sources that failed; their tools in Out are kept.
	Err error
}

// PrepareImport reads the library file out (none yet is an empty library), imports src and
// merges the tools imported into it (ImportOptions), writing nothing. The error is out's that
// cannot be read; a source that fails is in the result's Err.
func PrepareImport(ctx context.Context, src importer.Sources, out string, o ImportOptions) (*LibraryImport, error) {
	old, err := library.Read(out)
	if errors.Is(err, fs.ErrNotExist) {
		old, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	imported, reports, ierr := importer.Import(ctx, src)
	li := &LibraryImport{Out: out, Reports: reports, Err: ierr}
	if len(reports) == 0 {
		return li, nil
	}
	base := old
	if o.Replace {
		base = nil
	}
	li.Library = library.Merge(base, imported, importer.Covered(reports)...)
	if o.Template != "" {
		li.Library.Template = o.Template
	}
	li.Changes = library.Diff(old, li.Library)
	return li, nil
}

// Write writes the prepared library to its file, atomically (library.Write: a library that
// does not check is not written).
func (li *LibraryImport) Write() error {
	if li.Library == nil {
		return fmt.Errorf("%s not written: nothing imported", li.Out)
	}
	return library.Write(li.Out, li.Library)
}

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
func ImportLibrary(ctx context.Context, src importer.Sources, out string) (library.Changes, []importer.Report, error) {
	old, err := library.Read(out)
	if errors.Is(err, fs.ErrNotExist) {
		old, err = nil, nil
	}
	if err != nil {
		return library.Changes{}, nil, fmt.Errorf("import: %w (not overwritten)", err)
	}
	imported, reports, ierr := importer.Import(ctx, src)
	if len(reports) == 0 {
		return library.Changes{}, reports, ierr
	}
	merged := library.Merge(old, imported, importer.Covered(reports)...)
	changes := library.Diff(old, merged)
	if err := library.Write(out, merged); err != nil {
		return changes, reports, errors.Join(ierr, fmt.Errorf("import: %w", err))
	}
	return changes, reports, ierr
}

package data

import (
	"embed"
	"sync"
)

//go:embed default
var defaultFS embed.FS

var loadDefault = sync.OnceValues(func() (*Dataset, error) {
	return LoadFS(defaultFS, "default", "toolret-default")
})

// Default returns the embedded default dataset (see data/default/README.md), used by every
// command when no -data is given. The returned dataset is shared: do not modify it.
func Default() (*Dataset, error) { return loadDefault() }

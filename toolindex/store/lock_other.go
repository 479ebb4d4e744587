//go:build !unix

package store

import "os"

// lockLog does nothing where flock is not available: run one writer per index.
func lockLog(f *os.File) error { return nil }

//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockLog takes an exclusive lock on the open update log, so that one process at a time (a
// server, or cmd/export -update) writes an index. The lock goes with the file.
func lockLog(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("store: %s is locked: another process (a running cmd/serve, or cmd/export -update) has this index open", f.Name())
	}
	if err != nil {
		return fmt.Errorf("store: lock %s: %w", f.Name(), err)
	}
	return nil
}

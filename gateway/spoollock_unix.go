//go:build unix

package gateway

import (
	"fmt"
	"os"
	"syscall"
)

// lockSpool takes an exclusive lock on path+".lock" (waiting for it), so that gateway replicas
// sharing a state directory do not append to the spool while another drains it. unlock
// releases it.
func lockSpool(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("usage spool: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("usage spool: lock %s: %w", f.Name(), err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

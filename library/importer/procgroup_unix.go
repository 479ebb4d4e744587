//go:build unix

package importer

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// setProcessGroup makes cmd, once started, the leader of a process group of its own, so that
// what it starts in turn (npx's node, a shell wrapper's children) can be stopped with it
// (stopProcessGroup).
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// stopProcessGroup stops every process of group pgid: SIGTERM, then SIGKILL to those left
// after grace. A group with no process left is no error.
func stopProcessGroup(pgid int, grace time.Duration) error {
	if pgid <= 1 {
		return nil
	}
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("terminating process group %d: %w", pgid, err)
	}
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
			return nil
		}
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing process group %d: %w", pgid, err)
	}
	return nil
}

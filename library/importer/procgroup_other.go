//go:build !unix

package importer

import (
	"os/exec"
	"time"
)

// setProcessGroup does nothing where there are no POSIX process groups: the server's own
// process is still stopped when its session closes, what it started is not.
func setProcessGroup(*exec.Cmd) {}

// stopProcessGroup does nothing where there are no POSIX process groups.
func stopProcessGroup(int, time.Duration) error { return nil }

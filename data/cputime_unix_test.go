//go:build unix

package data

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time: unlike wall time it does not grow when
// other processes load the machine, so speed limits in tests hold under contention.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build !unix

package data

import "time"

// cpuTime is unavailable here: speed limits fall back to wall time.
func cpuTime() time.Duration { return 0 }

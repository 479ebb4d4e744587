//go:build xla

package backend

import _ "github.com/gomlx/go-xla/compute/xla" // registers the "xla" backend (no auto-install).

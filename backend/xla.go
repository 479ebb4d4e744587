//go:build xla

package backend

import (
	"github.com/gomlx/compute"
	"github.com/gomlx/go-xla/compute/xla" // registers the "xla" backend (no auto-install).
	"github.com/gomlx/go-xla/pjrt"
)

func init() {
	// The CPU plugin's client option cpu_device_count sets its number of host devices
	// (XLA_FLAGS=--xla_force_host_platform_device_count is not read by the PJRT plugin).
	newXLACPU = func(cfg string, devices int) (compute.Backend, error) {
		return xla.NewWithOptions(cfg, pjrt.NamedValuesMap{"cpu_device_count": int64(devices)})
	}
}

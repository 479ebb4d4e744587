// Package backend opens the GoMLX compute backend toolret runs on.
//
// Names accepted by Open (and by every command's -backend flag, or $TOOLRET_BACKEND):
//
//	go        pure Go (default), run as "go:ops_sequential"; needs nothing installed.
//	onnx      ONNX Runtime on CPU ("onnx:cpu"); build with -tags onnx and install
//	          libonnxruntime.so.1 (scripts/install-onnxruntime.sh).
//	xla:cpu   XLA PJRT plugins; build with -tags xla and install the plugin
//	xla:cuda  yourself (see github.com/gomlx/go-xla). Nothing is downloaded at run time.
//
// A full GoMLX config ("go:parallelism=2", "onnx:/path/libonnxruntime.so") is passed through.
package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend" // the pure Go backend is always available.
)

// EnvVar names the environment variable read when no explicit backend is given.
const EnvVar = "TOOLRET_BACKEND"

// Default is the backend used when neither a flag nor an environment variable names one.
const Default = "go"

// Name returns the backend name to use: flagValue if set, else $TOOLRET_BACKEND, else
// $GOMLX_BACKEND, else Default.
func Name(flagValue string) string {
	for _, v := range []string{flagValue, os.Getenv(EnvVar), os.Getenv(compute.ConfigEnvVar)} {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return Default
}

// Config expands a short backend name into the GoMLX config string.
func Config(name string) string {
	switch name {
	case "", "go":
		return "go:ops_sequential"
	case "onnx", "onnxruntime":
		return "onnx:cpu"
	case "xla":
		return "xla:cpu"
	}
	return name
}

var (
	mu     sync.Mutex
	opened = map[string]compute.Backend{}
)

// Open returns the backend for name (see the package documentation), creating it once per
// config and sharing it afterwards. The error says how to get a backend that is missing.
func Open(name string) (compute.Backend, error) {
	warnNoSIMD()
	cfg := Config(name)
	kind, _, _ := strings.Cut(cfg, ":")
	mu.Lock()
	defer mu.Unlock()
	if b, ok := opened[cfg]; ok {
		return b, nil
	}
	if !registered(kind) {
		return nil, fmt.Errorf("backend %q: %s", name, missingHint(kind))
	}
	if kind == "onnx" || kind == "onnxruntime" {
		os.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
		if os.Getenv("ONNXRUNTIME_SHARED_LIBRARY_PATH") == "" && !strings.Contains(cfg, "/") {
			lib := ONNXRuntimeCachePath()
			if _, err := os.Stat(lib); err != nil {
				return nil, fmt.Errorf("backend %q: libonnxruntime.so.1 not found (ONNXRUNTIME_SHARED_LIBRARY_PATH unset and %s missing): run scripts/install-onnxruntime.sh or `make install-onnx`", name, lib)
			}
			os.Setenv("ONNXRUNTIME_SHARED_LIBRARY_PATH", lib)
		}
	}
	if kind == "xla" {
		os.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	}
	b, err := compute.NewWithConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("backend %q (%s): %w; %s", name, cfg, err, missingHint(kind))
	}
	opened[cfg] = b
	return b, nil
}

// ONNXRuntimeCachePath is where scripts/install-onnxruntime.sh puts libonnxruntime.so.1.
func ONNXRuntimeCachePath() string {
	dir := os.Getenv("TOOLRET_CACHE")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		dir = filepath.Join(home, ".cache", "toolret")
	}
	return filepath.Join(dir, "onnxruntime", "libonnxruntime.so.1")
}

func registered(kind string) bool {
	for _, n := range compute.List() {
		if n == kind {
			return true
		}
	}
	return false
}

func missingHint(kind string) string {
	switch kind {
	case "onnx", "onnxruntime":
		return "the onnx backend needs a binary built with `-tags onnx` and libonnxruntime.so.1 (scripts/install-onnxruntime.sh, or set ONNXRUNTIME_SHARED_LIBRARY_PATH)"
	case "xla":
		return "the xla backend needs a binary built with `-tags xla` and a PJRT plugin installed beforehand (see github.com/gomlx/go-xla; toolret never downloads it)"
	case "go":
		return "the pure Go backend is always linked in"
	}
	return fmt.Sprintf("unknown backend kind %q: use go, onnx, xla:cpu or xla:cuda", kind)
}

var warnOnce sync.Once

func warnNoSIMD() {
	warnOnce.Do(func() {
		if simdWarning != "" && os.Getenv("TOOLRET_NO_SIMD_WARNING") == "" {
			fmt.Fprintln(os.Stderr, simdWarning)
		}
	})
}

// Package backend opens the GoMLX compute backend toolret runs on.
//
// Names accepted by Open (and by every command's -backend flag, or $TOOLRET_BACKEND):
//
//	go        pure Go (default), run as "go:ops_sequential"; needs nothing installed.
//	auto      the fastest backend present for bulk encoding (Auto): onnx when the binary has it
//	          and libonnxruntime.so.1 is found, else go.
//	onnx      ONNX Runtime on CPU ("onnx:cpu"); build with -tags onnx and install
//	          libonnxruntime.so.1 (scripts/install-onnxruntime.sh).
//	xla:cpu   XLA's PJRT CPU plugin; build with -tags xla and run `make install-xla`, which puts
//	          it at XLAPluginCachePath ("xla" alone means xla:cpu).
//	xla:cuda  XLA's PJRT CUDA plugin; build with -tags xla and install it beforehand
//	          (`make install-xla-cuda`, or see github.com/gomlx/go-xla).
//
// Options follow a comma (xla:cuda,preallocate=false). toolret adds one of its own to xla:cpu:
// devices=N makes the CPU plugin present N host devices (its cpu_device_count client option;
// the plugin's default is 4), for training with -devices (train.Config.Devices) on CPU.
//
// Nothing is downloaded at run time.
//
// A full GoMLX config ("go:parallelism=2", "onnx:/path/libonnxruntime.so") is passed through.
//
// Training opens its backend through Training: plain onnx runs without ONNX Runtime's CPU
// memory arena there (cpu_mem_arena=false).
package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
	case "auto":
		return Config(Auto())
	}
	return name
}

// Auto names the fastest backend present for bulk encoding (a zero-shot index of a whole
// library): "onnx" when this binary has the onnx backend (-tags onnx) and libonnxruntime.so.1
// is found ($ONNXRUNTIME_SHARED_LIBRARY_PATH, else ONNXRuntimeCachePath), else "go". XLA is
// never picked: its first compilation of each shape costs more than a library's encoding.
func Auto() string {
	if ONNXAvailable() {
		return "onnx"
	}
	return "go"
}

// ONNXAvailable reports whether Open("onnx") can find what it needs: the backend compiled in
// and the ONNX Runtime library on disk.
func ONNXAvailable() bool {
	if !registered("onnx") {
		return false
	}
	lib := os.Getenv("ONNXRUNTIME_SHARED_LIBRARY_PATH")
	if lib == "" {
		lib = ONNXRuntimeCachePath()
	}
	_, err := os.Stat(lib)
	return err == nil
}

// Training returns the backend name a training run opens for name: plain "onnx" (or
// "onnxruntime", "onnx:cpu") becomes "onnx:cpu,cpu_mem_arena=false"; any other name, and an onnx
// config that sets options of its own, is returned as it is. ONNX Runtime's arena keeps, for
// every compiled graph (one per input shape), the most memory that graph ever used; a
// training run compiles a forward-and-backward graph per batch shape and holds them all:
// all-MiniLM-L6-v2 at batch 64 peaked at 7.2 GiB with the arena and 4.4 GiB without, at the
// same seconds per step (docs/results/2026-11-26-gradcache.md). Encoding keeps the arena
// (12% faster with it).
func Training(name string) string {
	if Config(name) == "onnx:cpu" {
		return "onnx:cpu,cpu_mem_arena=false"
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
	xcfg, devices, err := cpuDevices(xlaConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("backend %q: %w", name, err)
	}
	var b compute.Backend
	if devices > 0 {
		b, err = newXLACPU(strings.TrimPrefix(xcfg, "xla:"), devices)
	} else {
		b, err = compute.NewWithConfig(xcfg)
	}
	if err != nil {
		return nil, fmt.Errorf("backend %q (%s): %w; %s", name, cfg, err, openHint(kind))
	}
	opened[cfg] = b
	return b, nil
}

// cacheDir is $TOOLRET_CACHE, else ~/.cache/toolret.
func cacheDir() string {
	if dir := os.Getenv("TOOLRET_CACHE"); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "toolret")
}

// CacheDir is toolret's cache of installed runtimes and tools: $TOOLRET_CACHE, else
// ~/.cache/toolret.
func CacheDir() string { return cacheDir() }

// ONNXRuntimeCachePath is where scripts/install-onnxruntime.sh puts libonnxruntime.so.1.
func ONNXRuntimeCachePath() string {
	return filepath.Join(cacheDir(), "onnxruntime", "libonnxruntime.so.1")
}

// XLAPluginCachePath is where scripts/install-xla.sh (`make install-xla`) puts XLA's PJRT CPU
// plugin.
func XLAPluginCachePath() string {
	return filepath.Join(cacheDir(), "xla", "pjrt_c_api_cpu_plugin.so")
}

// XLACUDAPluginCachePath is where scripts/install-xla-cuda.sh (`make install-xla-cuda`) puts
// XLA's PJRT CUDA plugin, with the NVIDIA libraries it loads beside it (nvidia/cu13/lib, ...).
func XLACUDAPluginCachePath() string {
	return filepath.Join(cacheDir(), "xla-cuda", "nvidia", "pjrt_c_api_cuda_plugin.so")
}

// xlaConfig points an "xla:cpu[,options]" or "xla:cuda[,options]" config at the plugin in
// toolret's cache, when it is there and $PJRT_PLUGIN_LIBRARY_PATH does not say where to search.
// go-xla reads that variable once, when the program starts, so the cached plugin is named by its
// absolute path, which go-xla loads as it is (and, as the path names cpu or cuda, treats as
// that platform). Other configs are returned unchanged.
func xlaConfig(cfg string) string {
	kind, rest, _ := strings.Cut(cfg, ":")
	if kind != "xla" {
		return cfg
	}
	plugin, opts, hasOpts := strings.Cut(rest, ",")
	var lib string
	switch plugin {
	case "cpu":
		lib = XLAPluginCachePath()
	case "cuda":
		lib = XLACUDAPluginCachePath()
	default:
		return cfg
	}
	if _, set := os.LookupEnv("PJRT_PLUGIN_LIBRARY_PATH"); set {
		return cfg
	}
	if _, err := os.Stat(lib); err != nil {
		return cfg
	}
	if hasOpts {
		return "xla:" + lib + "," + opts
	}
	return "xla:" + lib
}

// newXLACPU opens the XLA CPU plugin of cfg (the config after "xla:") with devices host
// devices; set by xla.go in builds with -tags xla.
var newXLACPU func(cfg string, devices int) (compute.Backend, error)

// cpuDevices takes toolret's devices=N option out of an XLA config and returns the rest and N
// (0 without the option). The option applies to the CPU plugin only.
func cpuDevices(cfg string) (string, int, error) {
	kind, rest, _ := strings.Cut(cfg, ":")
	plugin, opts, _ := strings.Cut(rest, ",")
	if kind != "xla" || opts == "" {
		return cfg, 0, nil
	}
	n := 0
	var keep []string
	for _, o := range strings.Split(opts, ",") {
		v, ok := strings.CutPrefix(o, "devices=")
		if !ok {
			keep = append(keep, o)
			continue
		}
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			return "", 0, fmt.Errorf("option devices=%s: want a count >= 1", v)
		}
	}
	if n == 0 {
		return cfg, 0, nil
	}
	if plugin != "cpu" && !strings.HasSuffix(plugin, "_cpu_plugin.so") {
		return "", 0, fmt.Errorf("option devices=%d: only the CPU plugin (xla:cpu) makes host devices on request; a GPU plugin uses every visible GPU (choose them with visible_devices=0;1)", n)
	}
	out := kind + ":" + plugin
	if len(keep) > 0 {
		out += "," + strings.Join(keep, ",")
	}
	return out, n, nil
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
		return fmt.Sprintf("the xla backend needs a binary built with `-tags xla` and a PJRT plugin installed beforehand: `make install-xla` puts the CPU one at %s, `make install-xla-cuda` the CUDA one at %s (toolret never downloads them at run time)", XLAPluginCachePath(), XLACUDAPluginCachePath())
	case "go":
		return "the pure Go backend is always linked in"
	}
	return fmt.Sprintf("unknown backend kind %q: use go, onnx, xla:cpu or xla:cuda", kind)
}

// openHint says what to check when a backend linked into this binary fails to open: its
// options or its runtime library, not the build tags missingHint speaks of.
func openHint(kind string) string {
	switch kind {
	case "onnx", "onnxruntime":
		return "check the options after \"onnx:\" (docs/backends.md lists them) and that libonnxruntime.so.1 is the version scripts/install-onnxruntime.sh installs (or the one ONNXRUNTIME_SHARED_LIBRARY_PATH names)"
	case "xla":
		return fmt.Sprintf("check the options after \"xla:\" (docs/backends.md lists them) and that the PJRT plugin is installed: `make install-xla` puts the CPU one at %s, `make install-xla-cuda` the CUDA one at %s", XLAPluginCachePath(), XLACUDAPluginCachePath())
	}
	return "check the options after the backend name (docs/backends.md lists them)"
}

var warnOnce sync.Once

func warnNoSIMD() {
	warnOnce.Do(func() {
		if simdWarning != "" && os.Getenv("TOOLRET_NO_SIMD_WARNING") == "" {
			fmt.Fprintln(os.Stderr, simdWarning)
		}
	})
}

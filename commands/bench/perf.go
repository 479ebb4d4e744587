package benchcmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"

	"github.com/gomlx/compute"
	"github.com/toolret/toolret/backend"
)

// openBackends opens each named backend, printing a skip line (name and reason) for those
// that cannot be opened; skipped lists them. With training, each opens as a training run
// opens it (backend.Training).
func openBackends(list string, width int, training bool) (names []string, bes []compute.Backend, skipped []string) {
	for _, name := range splitBackends(list) {
		cfg := name
		if training {
			cfg = backend.Training(name)
		}
		be, err := backend.Open(cfg)
		if err != nil {
			fmt.Printf("%-*s skipped: cannot open backend %q: %v\n", width, "toolret-"+name, name, err)
			skipped = append(skipped, name)
			continue
		}
		names, bes = append(names, name), append(bes, be)
	}
	return names, bes, skipped
}

// splitBackends splits a -backends list at commas, keeping a backend's own options with it:
// an entry starts at a part with a ':' or a bare backend name (go, onnx, onnxruntime, xla),
// any other part (intra_threads=1, parallel) belongs to the entry before it, so
// "go,onnx:cpu,intra_threads=1" is go and onnx:cpu,intra_threads=1.
func splitBackends(list string) []string {
	var out []string
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		switch {
		case strings.Contains(p, ":"), p == "go", p == "onnx", p == "onnxruntime", p == "xla", len(out) == 0:
			out = append(out, p)
		default:
			out[len(out)-1] += "," + p
		}
	}
	return out
}

// errNotMeasured marks a run that measured what it could but skipped an engine: the
// command goes on with the others and exits with status 1.
var errNotMeasured = errors.New("not measured")

// skippedError returns an errNotMeasured error naming the skipped backends, nil if none.
func skippedError(skipped []string) error {
	if len(skipped) == 0 {
		return nil
	}
	return fmt.Errorf("%w: backends %s", errNotMeasured, strings.Join(skipped, ", "))
}

// profilePath is the CPU profile file of one backend: file itself when only one backend is
// measured, else file with "-NAME" before its extension (NAME with ':' and ',' as '_').
func profilePath(file, name string, several bool) string {
	if file == "" || !several {
		return file
	}
	ext := filepath.Ext(file)
	safe := strings.NewReplacer(":", "_", ",", "_", "/", "_", "=", "_").Replace(name)
	return strings.TrimSuffix(file, ext) + "-" + safe + ext
}

// profile runs f under a Go CPU profile written to path ("" runs f alone).
func profile(path string, f func() error) error {
	if path == "" {
		return f()
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return fmt.Errorf("-profile %s: %w", path, err)
	}
	ferr := f()
	pprof.StopCPUProfile()
	if err := out.Close(); err != nil && ferr == nil {
		return fmt.Errorf("-profile %s: %w", path, err)
	}
	return ferr
}

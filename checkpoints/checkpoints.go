// Package checkpoints saves and restores training state atomically.
//
// A checkpoint is a directory RUN/checkpoints/step-<N>/ holding
//
//	variables.safetensors  every variable of the model.Store (weights, optimizer moments,
//	                       step counters, RNG state), in its own dtype
//	state.json             the Manifest: step, epoch, data position, seeds, dataset
//	                       fingerprint, metrics, sha256 of every file; written last
//	<extra files>          model config, tokenizer, ... given by the model kind
//
// It is built in a temporary directory beside it, every file fsynced, then renamed into place
// and the parent fsynced: a crash at any moment leaves either the old set of checkpoints or
// the new one, never a half-written checkpoint under a final name. Loading verifies every
// checksum and tensor before touching the store, so a damaged checkpoint is reported by name
// and never half-loaded.
package checkpoints

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/internal/atomicfile"
	"github.com/toolret/toolret/safetensors"
)

// OptimizerScope is the scope of a store that holds the optimizer's state (Adam's moments,
// step counts, gradient accumulators): saved in every checkpoint for resuming, loaded as
// non-trainable variables, and read by no inference graph.
const OptimizerScope = "/optimizer"

// Manifest describes one checkpoint.
type Manifest struct {
	Step        int                `json:"step"`  // optimizer steps done
	Epoch       int                `json:"epoch"` // current epoch (0-based)
	Position    int                `json:"position"`
	Seed        uint64             `json:"seed"`
	Fingerprint string             `json:"data_fingerprint"`
	Metrics     map[string]float64 `json:"metrics,omitempty"`
	Extra       map[string]any     `json:"extra,omitempty"`
	Files       map[string]string  `json:"files"` // name -> sha256
}

const (
	variablesFile = "variables.safetensors"
	manifestFile  = "state.json"
	prefix        = "step-"
)

var dtypeNames = map[dtypes.DType]string{
	dtypes.Float32: "F32", dtypes.Float64: "F64", dtypes.Float16: "F16", dtypes.BFloat16: "BF16",
	dtypes.Int64: "I64", dtypes.Int32: "I32", dtypes.Int16: "I16", dtypes.Int8: "I8",
	dtypes.Uint64: "U64", dtypes.Uint32: "U32", dtypes.Uint16: "U16", dtypes.Uint8: "U8", dtypes.Bool: "BOOL",
}

func dtypeFromName(s string) (dtypes.DType, bool) {
	for k, v := range dtypeNames {
		if v == s {
			return k, true
		}
	}
	return dtypes.InvalidDType, false
}

// Dir returns the directory of the checkpoint at step within runDir.
func Dir(runDir string, step int) string {
	return filepath.Join(runDir, "checkpoints", fmt.Sprintf("%s%09d", prefix, step))
}

// Save writes a checkpoint of every variable of store plus extra files (name -> content)
// for m.Step into runDir/checkpoints, atomically. It returns the checkpoint directory.
func Save(runDir string, store *model.Store, m Manifest, extra map[string][]byte) (string, error) {
	final := Dir(runDir, m.Step)
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	tmp, err := atomicfile.TempDir(parent, ".tmp-"+filepath.Base(final)+"-") // 0755, not MkdirTemp's 0700
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // no-op after the rename
	// Each variable's bytes go from its tensor to the file as the file reaches them: a
	// checkpoint costs no copy of the weights and the optimizer's state.
	var entries []safetensors.Entry
	for v := range store.IterVariables() {
		t, err := v.Value()
		if err != nil {
			return "", fmt.Errorf("checkpoint: variable %s: %w", v.Path(), err)
		}
		name, ok := dtypeNames[t.DType()]
		if !ok {
			return "", fmt.Errorf("checkpoint: variable %s: unsupported dtype %s", v.Path(), t.DType())
		}
		entries = append(entries, safetensors.Entry{Name: v.Path(), DType: name, Shape: t.Shape().Dimensions, Size: int(t.Shape().ByteSize()),
			Write: func(w io.Writer) error {
				var werr error
				if err := t.ConstBytes(func(b []byte) { _, werr = w.Write(b) }); err != nil {
					return fmt.Errorf("variable %s: %w", v.Path(), err)
				}
				return werr
			}})
	}
	if err := safetensors.WriteEntries(filepath.Join(tmp, variablesFile), entries, map[string]string{"format": "toolret"}); err != nil {
		return "", err
	}
	m.Files = map[string]string{}
	names := []string{variablesFile}
	for name, content := range extra {
		if name == manifestFile || name == variablesFile || filepath.Base(name) != name || name == "" {
			return "", fmt.Errorf("checkpoint: invalid extra file name %q", name)
		}
		if err := writeSync(filepath.Join(tmp, name), content); err != nil {
			return "", err
		}
		names = append(names, name)
	}
	for _, n := range names {
		sum, err := fileSHA(filepath.Join(tmp, n))
		if err != nil {
			return "", err
		}
		m.Files[n] = sum
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", err
	}
	if err := writeSync(filepath.Join(tmp, manifestFile), b); err != nil {
		return "", err
	}
	if err := syncDir(tmp); err != nil {
		return "", err
	}
	if _, err := os.Stat(final); err == nil {
		// Same step saved again (e.g. after a resume): replace it.
		old := final + ".old"
		os.RemoveAll(old)
		if err := os.Rename(final, old); err != nil {
			return "", err
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	return final, syncDir(parent)
}

// List returns the steps of the complete checkpoints of runDir, ascending. Temporary
// directories of interrupted saves are ignored.
func List(runDir string) ([]int, error) {
	entries, err := os.ReadDir(filepath.Join(runDir, "checkpoints"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var steps []int
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) || strings.HasSuffix(e.Name(), ".old") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), prefix))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(runDir, "checkpoints", e.Name(), manifestFile)); err == nil {
			steps = append(steps, n)
		}
	}
	sort.Ints(steps)
	return steps, nil
}

// Prune removes all checkpoints but the last keep ones and those in protect (e.g. the best).
func Prune(runDir string, keep int, protect ...int) error {
	steps, err := List(runDir)
	if err != nil {
		return err
	}
	keepSet := map[int]bool{}
	for _, p := range protect {
		keepSet[p] = true
	}
	for i := len(steps) - 1; i >= 0 && i >= len(steps)-keep; i-- {
		keepSet[steps[i]] = true
	}
	for _, s := range steps {
		if !keepSet[s] {
			if err := os.RemoveAll(Dir(runDir, s)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Checkpoint is a loaded, verified checkpoint.
type Checkpoint struct {
	Dir      string
	Manifest Manifest
	values   map[string]*tensors.Tensor
}

// Load reads and verifies the checkpoint in dir: every file's checksum and every tensor.
func Load(dir string) (*Checkpoint, error) {
	b, err := os.ReadFile(filepath.Join(dir, manifestFile))
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %s: %w", dir, manifestFile, err)
	}
	if _, ok := m.Files[variablesFile]; !ok {
		return nil, fmt.Errorf("checkpoint %s: manifest lists no %s", dir, variablesFile)
	}
	for name, want := range m.Files {
		got, err := fileSHA(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
		}
		if got != want {
			return nil, fmt.Errorf("checkpoint %s: %s is corrupt or truncated (sha256 %s, manifest says %s)", dir, name, got[:12], want[:12])
		}
	}
	f, err := safetensors.Open(filepath.Join(dir, variablesFile))
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	c := &Checkpoint{Dir: dir, Manifest: m, values: map[string]*tensors.Tensor{}}
	for _, name := range f.Names() {
		raw, info, _ := f.Raw(name)
		dt, ok := dtypeFromName(info.DType)
		if !ok {
			return nil, fmt.Errorf("checkpoint %s: tensor %s: unsupported dtype %s", dir, name, info.DType)
		}
		t := tensors.FromShape(shapes.Make(dt, info.Shape...))
		if err := t.MutableBytes(func(dst []byte) { copy(dst, raw) }); err != nil {
			return nil, fmt.Errorf("checkpoint %s: tensor %s: %w", dir, name, err)
		}
		c.values[name] = t
	}
	return c, nil
}

// File returns the content of an extra file of the checkpoint.
func (c *Checkpoint) File(name string) ([]byte, error) {
	if _, ok := c.Manifest.Files[name]; !ok {
		return nil, fmt.Errorf("checkpoint %s: no file %q", c.Dir, name)
	}
	return os.ReadFile(filepath.Join(c.Dir, name))
}

// Names returns the variable paths stored.
func (c *Checkpoint) Names() []string {
	var out []string
	for k := range c.values {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Restore creates every variable of the checkpoint in store (which must not have them yet:
// restore into a fresh store, before building any Exec), each holding the checkpoint's tensor;
// variables store declared beside them are initialised on backend. A variable that already
// exists with another shape is an error naming it.
func (c *Checkpoint) Restore(store *model.Store, backend compute.Backend) error {
	for _, name := range c.Names() {
		t := c.values[name]
		if v := store.GetVariable(name); v != nil && !v.Shape().Equal(t.Shape()) {
			return fmt.Errorf("checkpoint %s: variable %s has shape %s in the model, %s in the checkpoint", c.Dir, name, v.Shape(), t.Shape())
		}
	}
	for _, name := range c.Names() {
		t := c.values[name]
		if v := store.GetVariable(name); v != nil {
			if err := v.SetValue(t); err != nil {
				return fmt.Errorf("checkpoint %s: variable %s: %w", c.Dir, name, err)
			}
			continue
		}
		// The tensor becomes the variable's value as is, as hfweights loads pre-trained
		// weights: no initialisation graph, which on XLA would compile every value in as a
		// constant (minutes for a MiniLM checkpoint with its optimizer state on a GPU).
		v, err := store.CreateVariable(name, t)
		if err != nil {
			return fmt.Errorf("checkpoint %s: variable %s: %w", c.Dir, name, err)
		}
		if strings.Contains(name, "#") || strings.HasPrefix(name, OptimizerScope+"/") {
			v.Trainable = false
		}
	}
	// Variables the store declared beside the checkpoint's (a new head, say) get their own
	// initialisers run; none: no graph at all.
	return store.InitializeVariables(backend, nil)
}

func fileSHA(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeSync(path string, b []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

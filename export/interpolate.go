package export

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolret/toolret/safetensors"
)

// InterpolateHF writes to out the weight-space interpolation of two HuggingFace /
// sentence-transformers model directories of the same architecture: every floating-point
// tensor of a's model.safetensors becomes (1-alpha)·a + alpha·b (WiSE-FT, Wortsman et al.
// 2022: a fine-tuned model interpolated with its pre-trained start keeps more of the start's
// robustness to other data). alpha 0 is a, 1 is b. The other files (configuration,
// tokenizer, pooling) are a's. A tensor of a that b lacks, or with another shape, is an
// error naming it; tensors only b has (e.g. buffers) are left out. out is written in a
// temporary directory beside it and renamed into place; an existing out is refused.
func InterpolateHF(out, a, b string, alpha float64) error {
	if !(alpha >= 0 && alpha <= 1) {
		return fmt.Errorf("interpolate: weight %g: want a value in [0, 1]", alpha)
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("interpolate: %s exists", out)
	}
	fa, err := safetensors.Open(filepath.Join(a, "model.safetensors"))
	if err != nil {
		return fmt.Errorf("interpolate: %w", err)
	}
	fb, err := safetensors.Open(filepath.Join(b, "model.safetensors"))
	if err != nil {
		return fmt.Errorf("interpolate: %w", err)
	}
	var ts []safetensors.Tensor
	for _, name := range fa.Names() {
		ia, ib := fa.Tensors[name], fb.Tensors[name]
		if !strings.HasPrefix(ia.DType, "F") && ia.DType != "BF16" { // integer buffers: a's
			continue
		}
		if _, ok := fb.Tensors[name]; !ok {
			return fmt.Errorf("interpolate: tensor %s of %s is not in %s", name, a, b)
		}
		if !slices.Equal(ia.Shape, ib.Shape) {
			return fmt.Errorf("interpolate: tensor %s: shape %v in %s, %v in %s", name, ia.Shape, a, ib.Shape, b)
		}
		va, shape, err := fa.Float32(name)
		if err != nil {
			return fmt.Errorf("interpolate: %w", err)
		}
		vb, _, err := fb.Float32(name)
		if err != nil {
			return fmt.Errorf("interpolate: %w", err)
		}
		w := float32(alpha)
		for i := range va {
			va[i] = (1-w)*va[i] + w*vb[i]
		}
		ts = append(ts, safetensors.Tensor{Name: name, Shape: shape, Data: va})
	}
	if len(ts) == 0 {
		return fmt.Errorf("interpolate: %s has no floating-point tensor", a)
	}
	meta := map[string]string{"format": "pt", "toolret_interpolation": fmt.Sprintf("(1-%g)·%s + %g·%s", alpha, a, alpha, b)}
	err = writeModelDir(out, a, func(tmp string) error {
		return safetensors.Write(filepath.Join(tmp, "model.safetensors"), ts, meta)
	})
	if err != nil {
		return fmt.Errorf("interpolate: %w", err)
	}
	return nil
}

// writeModelDir writes the model directory out: src's files (copyModelFiles; none when src is
// ""), then what write puts beside them, in a temporary directory beside out that is renamed into place once
// complete, so out is never half-written.
func writeModelDir(out, src string, write func(tmp string) error) error {
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(out)), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(out)), ".model-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if src != "" {
		if err := copyModelFiles(tmp, src); err != nil {
			return err
		}
	}
	if err := write(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// copyModelFiles copies the files of the model directory src into dst, except its weights,
// its ONNX export and a toolret export manifest (which describe src, not the interpolation).
func copyModelFiles(dst, src string) error {
	return copyFiles(dst, src, func(rel string) bool {
		return rel == "model.safetensors" || rel == ManifestFile || rel == "onnx" || strings.HasPrefix(filepath.Base(rel), ".")
	})
}

// copyFiles copies the directory tree src into dst (existing), following symbolic links (as
// the hub cache's); skip, when not nil, leaves out a file or directory by its path relative
// to src.
func copyFiles(dst, src string, skip func(rel string) bool) error {
	return filepath.WalkDir(src, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		switch {
		case rel == ".":
			return nil
		case skip != nil && skip(rel):
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case e.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		in, err := os.Open(p) // follows the hub cache's symbolic links
		if err != nil {
			return err
		}
		defer in.Close()
		if fi, err := in.Stat(); err != nil {
			return err
		} else if fi.IsDir() {
			return fmt.Errorf("%s: a symbolic link to a directory", p)
		}
		o, err := os.Create(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		if _, err := io.Copy(o, in); err != nil {
			o.Close()
			return err
		}
		return o.Close()
	})
}

// Package atomicfile writes files so that a reader, or a process restarted after a crash,
// sees either the old content or the new one, never part of it: a temporary file in the same
// directory, written, synced, made readable (0644), renamed over the target, and the
// directory synced.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// Write writes b to path atomically, creating the directory if needed. Errors name path.
func Write(path string, b []byte) error {
	return WriteFunc(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// WriteFunc writes to path atomically what write writes (through a buffer, so a large file
// need not be held in memory), creating the directory if needed. Errors name path; when
// write fails, path is left as it was.
func WriteFunc(path string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: not every file system syncs directories
		d.Close()
	}
	return nil
}

// TempDir creates a new directory in dir whose name starts with prefix, with mode 0755 less
// the umask — the mode os.MkdirAll gives, so a directory assembled there and renamed into
// place is readable like any other (os.MkdirTemp makes 0700 directories).
func TempDir(dir, prefix string) (string, error) {
	for range 10000 {
		p := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64()&0xffffffffff, 36))
		err := os.Mkdir(p, 0o755)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("mkdir %s: no free temporary name", filepath.Join(dir, prefix+"*"))
}

// MkdirAll creates dir and any missing parents (0755 less the umask) and returns the
// directories it created, outermost first, so a caller that fails can remove them again
// (RemoveCreated).
func MkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	slices.Reverse(missing)
	var made []string
	for _, d := range missing {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			RemoveCreated(made)
			return nil, err
		}
		made = append(made, d)
	}
	return made, nil
}

// RemoveCreated removes the directories MkdirAll created, innermost first, each only if it
// is empty.
func RemoveCreated(made []string) {
	for i := len(made) - 1; i >= 0; i-- {
		os.Remove(made[i])
	}
}

// CopyTree copies the directories and regular files of src into dst (created as needed; files
// 0644). It is not atomic: copy into a directory no reader uses yet (a temporary one, or one
// renamed into place afterwards).
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

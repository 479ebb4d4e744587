package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hubPython returns a python that imports huggingface_hub ($TOOLRET_PYTHON,
// $TOOLRET_CACHE/venv/bin/python, ~/.cache/toolret/venv/bin/python, python3),
// or skips the test.
func hubPython(t *testing.T) string {
	t.Helper()
	cands := []string{os.Getenv("TOOLRET_PYTHON")}
	if d := os.Getenv("TOOLRET_CACHE"); d != "" {
		cands = append(cands, filepath.Join(d, "venv", "bin", "python"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		cands = append(cands, filepath.Join(home, ".cache", "toolret", "venv", "bin", "python"))
	}
	var tried []string
	for _, py := range append(cands, "python3") {
		if py == "" {
			continue
		}
		if exec.Command(py, "-c", "import huggingface_hub").Run() == nil {
			return py
		}
		tried = append(tried, py)
	}
	t.Skipf("no python with huggingface_hub (tried %s); set TOOLRET_PYTHON or pip install huggingface_hub", strings.Join(tried, ", "))
	return ""
}

// runPython runs script with args in the environment without the caller's
// hub settings and proxies, plus env, and decodes its JSON output into v.
func runPython(t *testing.T, py string, env []string, v any, script string, args ...string) {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "HF_") && !strings.HasPrefix(k, "HUGGINGFACE_") && k != "TRANSFORMERS_OFFLINE" &&
			!strings.HasSuffix(strings.ToLower(k), "_proxy") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HF_HOME="+t.TempDir(), "HF_HUB_DISABLE_TELEMETRY=1", "HF_HUB_DISABLE_XET=1",
		"HF_HUB_DISABLE_PROGRESS_BARS=1", "HF_HUB_DISABLE_IMPLICIT_TOKEN=1")
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.Bytes())
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("python output %q: %v\n%s", out, err, stderr.Bytes())
	}
}

const pyRead = `
import hashlib, json, sys
from huggingface_hub import hf_hub_download, snapshot_download
repo, rev, cache, names = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
out = {"snapshot": snapshot_download(repo, revision=rev, cache_dir=cache, local_files_only=True), "files": {}}
for n in names:
    p = hf_hub_download(repo, filename=n, revision=rev, cache_dir=cache, local_files_only=True)
    out["files"][n] = [p, hashlib.sha256(open(p, "rb").read()).hexdigest()]
print(json.dumps(out))
`

const pyDownload = `
import json, sys
from huggingface_hub import snapshot_download
print(json.dumps({"snapshot": snapshot_download(sys.argv[1], revision=sys.argv[2])}))
`

// layout describes the cache directory of org/model: refs and their
// commits, snapshot links and their targets, blob names and digests. The
// tree listings and missing-file markers of huggingface_hub are left out.
func layout(t *testing.T, cache string) map[string]string {
	t.Helper()
	dir := filepath.Join(cache, "models--org--model")
	m := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		switch {
		case top == "trees" || top == ".no_exist":
			return filepath.SkipDir
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			m[rel] = "-> " + target
			return err
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			m[rel] = sha256Hex(b)
			if top == "refs" {
				m[rel] = string(b)
			}
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestHuggingFaceHubInterop(t *testing.T) {
	py := hubPython(t)
	h := newFake(t)
	ctx := context.Background()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	revs := []string{"main", "v1.0"}

	// Go writes, huggingface_hub reads without network.
	goCache := filepath.Join(tmp, "go")
	names, _ := json.Marshal(defaultNames)
	for _, rev := range revs {
		id := ID{Repo: "org/model", Revision: rev}
		snap, err := h.client(goCache).Snapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Snapshot string
			Files    map[string][2]string
		}
		runPython(t, py, []string{"HF_HUB_OFFLINE=1"}, &got, pyRead, id.Repo, rev, goCache, string(names))
		if got.Snapshot != snap {
			t.Errorf("%s: huggingface_hub snapshot %s, Go %s", id, got.Snapshot, snap)
		}
		for _, n := range defaultNames {
			want := [2]string{filepath.Join(snap, filepath.FromSlash(n)), sha256Hex(h.files[n])}
			if got.Files[n] != want {
				t.Errorf("%s: huggingface_hub file %s = %q, want %q", id, n, got.Files[n], want)
			}
		}
	}

	// huggingface_hub downloads from the fake hub, Go reads without network;
	// both download all files and the layouts must agree.
	pyCache, allCache := filepath.Join(tmp, "py"), filepath.Join(tmp, "all")
	for _, rev := range revs {
		id := ID{Repo: "org/model", Revision: rev}
		var got struct{ Snapshot string }
		runPython(t, py, []string{"HF_ENDPOINT=" + h.hub.URL, "HF_HUB_CACHE=" + pyCache}, &got, pyDownload, id.Repo, rev)
		h.reset()
		snap, err := (&Client{Cache: pyCache, Offline: true}).Snapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if snap != got.Snapshot {
			t.Errorf("%s: Go snapshot %s, huggingface_hub %s", id, snap, got.Snapshot)
		}
		for _, n := range h.names() {
			if b, err := os.ReadFile(filepath.Join(snap, filepath.FromSlash(n))); err != nil || !bytes.Equal(b, h.files[n]) {
				t.Errorf("%s: file %s differs (%v)", id, n, err)
			}
		}
		if r := h.requests(); len(r) != 0 {
			t.Errorf("%s: offline Snapshot made requests %q", id, r)
		}
		c := h.client(allCache)
		c.AllowPatterns = []string{"*"}
		if _, err := c.Snapshot(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if py, all := layout(t, pyCache), layout(t, allCache); !maps.Equal(py, all) {
		t.Errorf("cache layouts differ\nhuggingface_hub: %v\nGo:              %v", py, all)
	}
}

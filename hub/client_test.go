package hub

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// defaultNames are the files of testFiles that DefaultFiles selects.
var defaultNames = []string{"1_Pooling/config.json", "config.json", "model.safetensors", "special_tokens_map.json", "vocab.txt"}

// checkSnapshot checks the cache layout of a download of names at commit.
func checkSnapshot(t *testing.T, h *fakeHub, cache, snap, commit string, names []string) {
	t.Helper()
	dir := filepath.Join(cache, "models--org--model")
	if want := filepath.Join(dir, "snapshots", commit); snap != want {
		t.Fatalf("snapshot %s, want %s", snap, want)
	}
	var blobs []string
	for _, n := range names {
		p := filepath.Join(snap, filepath.FromSlash(n))
		want := strings.Repeat("../", strings.Count(n, "/")+2) + "blobs/" + h.etag(n)
		if got, err := os.Readlink(p); err != nil || got != want {
			t.Errorf("link %s -> %q, %v; want %q", n, got, err, want)
		}
		if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, h.files[n]) {
			t.Errorf("content of %s differs (%v)", n, err)
		}
		blobs = append(blobs, h.etag(n))
	}
	slices.Sort(blobs)
	ents, err := os.ReadDir(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, slices.Compact(blobs)) {
		t.Errorf("blobs %q, want %q", got, blobs)
	}
	err = filepath.Walk(snap, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			rel, _ := filepath.Rel(snap, p)
			if !slices.Contains(names, filepath.ToSlash(rel)) {
				t.Errorf("unexpected snapshot entry %s", rel)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSnapshot(t *testing.T) {
	h := newFake(t)
	cache := t.TempDir()
	c := h.client(cache)
	ctx := context.Background()
	id := ID{Repo: "org/model"}
	snap, err := c.Snapshot(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	commit := h.refs["main"]
	checkSnapshot(t, h, cache, snap, commit, defaultNames)
	if b, err := os.ReadFile(filepath.Join(cache, "models--org--model", "refs", "main")); err != nil || string(b) != commit {
		t.Errorf("refs/main = %q, %v; want %q", b, err, commit)
	}
	reqs := h.requests()
	for _, want := range []string{
		"hub GET /api/models/org/model/revision/main",
		"hub HEAD /org/model/resolve/" + commit + "/1_Pooling/config.json",
		"hub HEAD /org/model/resolve/" + commit + "/model.safetensors",
		"cdn GET /lfs/" + h.etag("model.safetensors"),
	} {
		if !slices.Contains(reqs, want) {
			t.Errorf("no request %q in %q", want, reqs)
		}
	}
	for _, r := range reqs {
		if strings.Contains(r, "pytorch_model") || strings.Contains(r, "onnx") || strings.Contains(r, "auth=") {
			t.Errorf("unexpected request %q", r)
		}
	}

	h.reset()
	for _, c := range []*Client{c, {Endpoint: h.hub.URL, Cache: cache, Offline: true}} {
		if got, err := c.Snapshot(ctx, id); err != nil || got != snap {
			t.Errorf("second Snapshot = %q, %v; want %q", got, err, snap)
		}
		if got, err := c.Local(id); err != nil || got != snap {
			t.Errorf("Local = %q, %v; want %q", got, err, snap)
		}
	}
	if r := h.requests(); len(r) != 0 {
		t.Errorf("second Snapshot made requests %q", r)
	}

	// All files, by pattern, into a cache that has one of the blobs: it is linked, not fetched.
	h.reset()
	cache = t.TempDir()
	etag := h.etag("model.safetensors")
	writeTree(t, filepath.Join(cache, "models--org--model", "blobs"), map[string][]byte{etag: h.files["model.safetensors"]})
	c = h.client(cache)
	c.AllowPatterns = []string{"*"}
	if snap, err = c.Snapshot(ctx, ID{Repo: "org/model", Revision: commit}); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, h, cache, snap, commit, h.names())
	for _, r := range h.requests() {
		if strings.Contains(r, "GET /lfs/"+etag) {
			t.Errorf("cached blob fetched again: %q", r)
		}
	}
}

func TestSnapshotRevision(t *testing.T) {
	h := newFake(t)
	tests := []struct {
		rev, ref, api string
	}{
		{"v1.0", "v1.0", "/revision/v1.0"},
		{"refs/pr/1", "refs/pr/1", "/revision/refs%2Fpr%2F1"},
		{commitOf("main"), "", "/revision/" + commitOf("main")},
	}
	for _, tt := range tests {
		cache := t.TempDir()
		h.reset()
		id := ID{Repo: "org/model", Revision: tt.rev}
		snap, err := h.client(cache).Snapshot(context.Background(), id)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		commit, _ := h.commit(tt.rev)
		checkSnapshot(t, h, cache, snap, commit, defaultNames)
		refs := filepath.Join(cache, "models--org--model", "refs")
		if tt.ref == "" {
			if _, err := os.Stat(refs); err == nil {
				t.Errorf("%s: refs written for a commit revision", id)
			}
		} else if b, err := os.ReadFile(filepath.Join(refs, filepath.FromSlash(tt.ref))); err != nil || string(b) != commit {
			t.Errorf("%s: refs/%s = %q, %v; want %q", id, tt.ref, b, err, commit)
		}
		if r := h.requests(); len(r) == 0 || r[0] != "hub GET /api/models/org/model"+tt.api {
			t.Errorf("%s: first request %q, want %q", id, r, "GET /api/models/org/model"+tt.api)
		}
		if got, err := (&Client{Cache: cache, Offline: true}).Snapshot(context.Background(), id); err != nil || got != snap {
			t.Errorf("%s: offline Snapshot = %q, %v; want %q", id, got, err, snap)
		}
	}
}

func TestResume(t *testing.T) {
	tests := []struct {
		file    string
		noRange bool
	}{
		{"model.safetensors", false},
		{"vocab.txt", false},
		{"model.safetensors", true},
	}
	for _, tt := range tests {
		h := newFake(t)
		h.noRange = tt.noRange
		cache := t.TempDir()
		blob := filepath.Join(cache, "models--org--model", "blobs", h.etag(tt.file))
		data := h.files[tt.file]
		writeTree(t, filepath.Dir(blob), map[string][]byte{filepath.Base(blob) + ".incomplete": data[:len(data)/2]})
		snap, err := h.client(cache).Snapshot(context.Background(), ID{Repo: "org/model"})
		if err != nil {
			t.Errorf("%s: %v", tt.file, err)
			continue
		}
		checkSnapshot(t, h, cache, snap, h.refs["main"], defaultNames)
		want := " range=bytes=" + strconv.Itoa(len(data)/2) + "-"
		if !slices.ContainsFunc(h.requests(), func(r string) bool { return strings.HasSuffix(r, want) }) {
			t.Errorf("%s: no request with Range %q in %q", tt.file, want, h.requests())
		}
	}
}

func TestChecksumMismatch(t *testing.T) {
	tests := []struct {
		file, kind string
		digest     func([]byte) string
	}{
		{"model.safetensors", "sha256", sha256Hex},
		{"config.json", "git blob sha1", gitSHA1},
	}
	for _, tt := range tests {
		h := newFake(t)
		h.bad[tt.file] = true
		cache := t.TempDir()
		_, err := h.client(cache).Snapshot(context.Background(), ID{Repo: "org/model"})
		if err == nil {
			t.Errorf("%s: corrupt download accepted", tt.file)
			continue
		}
		for _, want := range []string{tt.file, "org/model", "expected " + tt.kind + " " + h.etag(tt.file), "got " + tt.digest(h.content(tt.file))} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not contain %q", tt.file, err, want)
			}
		}
		dir := filepath.Join(cache, "models--org--model")
		for _, p := range []string{
			filepath.Join("blobs", h.etag(tt.file)),
			filepath.Join("blobs", h.etag(tt.file)+".incomplete"),
			filepath.Join("snapshots", h.refs["main"], tt.file),
			filepath.Join("refs", "main"),
		} {
			if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
				t.Errorf("%s: %s left behind", tt.file, p)
			}
		}
	}
}

func TestSnapshotErrors(t *testing.T) {
	const secret = "hf_s3cr3tT0k3n"
	tests := []struct {
		name    string
		id      ID
		setup   func(h *fakeHub, c *Client)
		want    []string
		notWant string
	}{
		{"unknown repo", ID{Repo: "org/missing"}, nil,
			[]string{"hub: model org/missing (revision main) not found at http://127.0.0.1"}, ""},
		{"unknown revision", ID{Repo: "org/model", Revision: "nope"}, nil,
			[]string{"model org/model (revision nope) not found", "Invalid rev id: nope"}, ""},
		{"unknown file", ID{Repo: "org/model"}, func(h *fakeHub, c *Client) { h.ghost = []string{"extra.txt"} },
			[]string{"file extra.txt of model org/model (revision main) not found"}, ""},
		{"401 with token", ID{Repo: "org/model"}, func(h *fakeHub, c *Client) { h.status = 401; c.Token = secret },
			[]string{"401 Unauthorized", "HF_TOKEN"}, secret},
		{"401 without token", ID{Repo: "org/model"}, func(h *fakeHub, c *Client) { h.status = 401 },
			[]string{"401 Unauthorized", "private or gated", "set HF_TOKEN"}, ""},
		{"403", ID{Repo: "org/model"}, func(h *fakeHub, c *Client) { h.status = 403; c.Token = secret },
			[]string{"403 Forbidden", "HF_TOKEN"}, secret},
		{"500", ID{Repo: "org/model"}, func(h *fakeHub, c *Client) { h.status = 500 },
			[]string{"unexpected status 500 Internal Server Error"}, ""},
		{"invalid id", ID{Repo: "org/../x"}, nil, []string{"invalid model id"}, ""},
	}
	for _, tt := range tests {
		h := newFake(t)
		cache := t.TempDir()
		c := h.client(cache)
		if tt.setup != nil {
			tt.setup(h, c)
		}
		_, err := c.Snapshot(context.Background(), tt.id)
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", tt.name, err, w)
			}
		}
		if tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
			t.Errorf("%s: error %q shows %q", tt.name, err, tt.notWant)
		}
		if _, err := os.Stat(filepath.Join(cache, "models--org--model", "refs")); err == nil {
			t.Errorf("%s: refs written", tt.name)
		}
	}
}

func TestOffline(t *testing.T) {
	h := newFake(t)
	cache := t.TempDir()
	c := &Client{Endpoint: h.hub.URL, Cache: cache, Offline: true}
	_, err := c.Snapshot(context.Background(), ID{Repo: "org/model", Revision: "v1.0"})
	if !errors.Is(err, ErrNotCached) {
		t.Errorf("offline Snapshot of a missing model: %v, want ErrNotCached", err)
	}
	for _, want := range []string{"org/model@v1.0 is not in the hub cache " + cache, "HF_HUB_OFFLINE is set", `"make models"`,
		"huggingface-cli download org/model --revision v1.0", "HF_HUB_CACHE"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if r := h.requests(); len(r) != 0 {
		t.Errorf("offline Snapshot made requests %q", r)
	}
	if _, err := c.Local(ID{Repo: "org/model"}); !errors.Is(err, ErrNotCached) {
		t.Errorf("Local of a missing model: %v, want ErrNotCached", err)
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	cache := t.TempDir()
	_, err := (&Client{Endpoint: srv.URL, Cache: cache}).Snapshot(context.Background(), ID{Repo: "org/model"})
	if !errors.Is(err, ErrNotCached) {
		t.Errorf("Snapshot from a closed server: %v, want ErrNotCached", err)
	}
	for _, want := range []string{"org/model is not in the hub cache", "cannot be reached", `"make models"`, "huggingface-cli download org/model"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&Client{Endpoint: srv.URL, Cache: cache}).Snapshot(ctx, ID{Repo: "org/model"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Snapshot with a canceled context: %v", err)
	}
}

func TestNotWritable(t *testing.T) {
	h := newFake(t)
	readOnly := t.TempDir()
	if err := os.Chmod(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(readOnly, 0o755) })
	underFile := filepath.Join(t.TempDir(), "file")
	writeTree(t, filepath.Dir(underFile), map[string][]byte{"file": nil})
	tests := []struct{ name, cache string }{
		{"read-only directory", readOnly},
		{"path under a file", filepath.Join(underFile, "hub")},
	}
	for _, tt := range tests {
		if f, err := os.CreateTemp(tt.cache, "probe"); err == nil {
			f.Close()
			os.Remove(f.Name())
			t.Logf("%s: skipped: %s stays writable (running as root?)", tt.name, tt.cache)
			continue
		}
		h.reset()
		_, err := h.client(tt.cache).Snapshot(context.Background(), ID{Repo: "org/model"})
		if err == nil || !strings.Contains(err.Error(), "the hub cache "+tt.cache+" is not writable") {
			t.Errorf("%s: Snapshot = %v, want an error naming the cache", tt.name, err)
		}
		if r := h.requests(); len(r) != 0 {
			t.Errorf("%s: requests %q before checking the cache", tt.name, r)
		}
	}
}

func TestProgress(t *testing.T) {
	h := newFake(t)
	var buf bytes.Buffer
	c := h.client(t.TempDir())
	c.Progress = &buf
	if _, err := c.Snapshot(context.Background(), ID{Repo: "org/model"}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := strings.Count(out, "\n"); n != len(defaultNames) || !strings.HasSuffix(out, "\n") {
		t.Errorf("%d lines in progress output %q, want %d", n, out, len(defaultNames))
	}
	for _, want := range []string{"\rmodel.safetensors  300.0 KiB / 300.0 KiB 100%", "/s", "\rconfig.json  23 B / 23 B 100%"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output %q does not contain %q", out, want)
		}
	}
}

func TestToken(t *testing.T) {
	h := newFake(t)
	c := h.client(t.TempDir())
	c.Token = "tok"
	if _, err := c.Snapshot(context.Background(), ID{Repo: "org/model"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range h.requests() {
		hub := strings.HasPrefix(r, "hub ")
		if auth := strings.HasSuffix(r, " auth=Bearer tok"); auth != hub {
			t.Errorf("request %q: authorization sent %v, want %v", r, auth, hub)
		}
	}
}

func TestNewClient(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("filetok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		endpoint, token, offline string
		wantEndpoint, wantToken  string
		wantOffline              bool
	}{
		{"", "", "", DefaultEndpoint, "filetok", false},
		{"http://mirror:8080/", "t1", "1", "http://mirror:8080", "t1", true},
		{"http://m", "t2", "YES", "http://m", "t2", true},
		{"http://m", "t2", "0", "http://m", "t2", false},
	}
	for _, tt := range tests {
		t.Setenv("HF_ENDPOINT", tt.endpoint)
		t.Setenv("HF_TOKEN", tt.token)
		t.Setenv("HF_TOKEN_PATH", tok)
		t.Setenv("HF_HUB_OFFLINE", tt.offline)
		t.Setenv("HF_HUB_CACHE", "/c")
		c := NewClient()
		if c.Endpoint != tt.wantEndpoint || c.Token != tt.wantToken || c.Offline != tt.wantOffline || c.Cache != "/c" ||
			c.HTTP == nil || c.Progress != os.Stderr {
			t.Errorf("NewClient() with %q %q %q = %+v", tt.endpoint, tt.token, tt.offline, c)
		}
	}
}

func TestResolve(t *testing.T) {
	h := newFake(t)
	cache := t.TempDir()
	t.Setenv("HF_ENDPOINT", h.hub.URL)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", filepath.Join(cache, "none"))
	t.Setenv("HF_HUB_OFFLINE", "")
	ctx := context.Background()
	dir := t.TempDir()
	if got, err := Resolve(ctx, dir); err != nil || got != dir {
		t.Errorf("Resolve(%q) = %q, %v", dir, got, err)
	}
	if _, err := Resolve(ctx, "no such model"); err == nil || !strings.Contains(err.Error(), `"no such model" is neither a directory nor a hub id`) {
		t.Errorf("Resolve of a bad reference: %v", err)
	}
	want := filepath.Join(cache, "models--org--model", "snapshots", h.refs["v1.0"])
	if got, err := Resolve(ctx, "org/model@v1.0"); err != nil || got != want {
		t.Errorf("Resolve(org/model@v1.0) = %q, %v; want %q", got, err, want)
	}
}

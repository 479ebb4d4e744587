package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Client fetches models from a hub into the cache.
type Client struct {
	Endpoint string       // hub URL; "" means $HF_ENDPOINT or DefaultEndpoint
	Token    string       // sent as "Authorization: Bearer ..." to the hub's host only; never shown
	Cache    string       // cache directory; "" means CacheDir()
	Offline  bool         // never use the network
	HTTP     *http.Client // nil means http.DefaultClient; its CheckRedirect is replaced
	Progress io.Writer    // where download progress bars go; nil: nowhere

	// AllowPatterns selects the repository files to fetch with shell
	// patterns ('*' also matches '/'; a pattern ending in '/' matches a
	// directory's files). Nil means DefaultFiles.
	AllowPatterns []string
}

// NewClient returns a Client configured from the environment: $HF_ENDPOINT,
// $HF_TOKEN (else the token file that "huggingface-cli login" writes),
// CacheDir(), and $HF_HUB_OFFLINE. Progress goes to os.Stderr.
func NewClient() *Client {
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment}
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = t.Clone()
	}
	tr.ResponseHeaderTimeout = time.Minute
	return &Client{
		Endpoint: endpoint(""),
		Token:    token(),
		Cache:    CacheDir(),
		Offline:  isTrue(os.Getenv("HF_HUB_OFFLINE")),
		HTTP:     &http.Client{Transport: tr},
		Progress: os.Stderr,
	}
}

func endpoint(ep string) string {
	if ep == "" {
		ep = os.Getenv("HF_ENDPOINT")
	}
	if ep == "" {
		ep = DefaultEndpoint
	}
	return strings.TrimRight(ep, "/")
}

func token() string {
	if t := os.Getenv("HF_TOKEN"); t != "" {
		return t
	}
	name := os.Getenv("HF_TOKEN_PATH")
	if name == "" {
		name = filepath.Join(hfHome(), "token")
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func isTrue(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

func (c *Client) cache() string {
	if c.Cache == "" {
		return CacheDir()
	}
	return c.Cache
}

// Local returns the snapshot directory of id from the cache, without using
// the network, or an error wrapping ErrNotCached. A snapshot is complete when
// refs/<revision> names a commit whose snapshot has a config.json.
func (c *Client) Local(id ID) (string, error) {
	return local(c.cache(), id)
}

// Snapshot returns the snapshot directory of id, downloading the missing
// files unless c.Offline. A complete snapshot in the cache (see Local) is
// returned without any network request.
func (c *Client) Snapshot(ctx context.Context, id ID) (string, error) {
	snap, err := c.Local(id)
	if err == nil || !errors.Is(err, ErrNotCached) {
		return snap, err
	}
	cache := c.cache()
	if c.Offline {
		return "", fmt.Errorf("hub: model %s is %w %s and HF_HUB_OFFLINE is set: %s", id, ErrNotCached, cache, hint(id))
	}
	if err := writable(cache); err != nil {
		return "", fmt.Errorf("hub: cannot download %s: the hub cache %s is not writable (set HF_HUB_CACHE): %w", id, cache, err)
	}
	info, err := c.info(ctx, id)
	if err != nil {
		return "", err
	}
	var names []string
	for _, s := range info.Siblings {
		if !validPath(s.Name) {
			return "", fmt.Errorf("hub: model %s: unsafe file name %q", id, s.Name)
		}
		names = append(names, s.Name)
	}
	names = c.filter(names)
	if len(names) == 0 {
		return "", fmt.Errorf("hub: model %s (revision %s) has no files to download", id.Repo, id.rev())
	}
	commit, rev := info.Sha, info.Sha
	if rev == "" {
		rev = id.rev()
	}
	var files []file
	for _, name := range names {
		f, err := c.head(ctx, id, rev, name)
		if err != nil {
			return "", err
		}
		if commit == "" {
			commit = f.commit
		}
		files = append(files, f)
	}
	if !isHex(commit, 40) {
		return "", fmt.Errorf("hub: model %s: the hub at %s sent no commit hash", id, c.endpoint())
	}
	dir := repoDir(cache, id.Repo)
	if err := os.MkdirAll(filepath.Join(dir, "blobs"), 0o755); err != nil {
		return "", fmt.Errorf("hub: cannot download %s: %w", id, err)
	}
	snap = filepath.Join(dir, "snapshots", commit)
	for _, f := range files {
		blob := filepath.Join(dir, "blobs", f.etag)
		if _, err := os.Stat(blob); err != nil {
			if err := c.download(ctx, id, f, blob); err != nil {
				return "", err
			}
		}
		if _, err := link(blob, filepath.Join(snap, filepath.FromSlash(f.name))); err != nil {
			return "", fmt.Errorf("hub: model %s: linking %s: %w", id, f.name, err)
		}
	}
	if r := id.rev(); r != commit {
		if _, err := writeRef(dir, r, commit); err != nil {
			return "", fmt.Errorf("hub: model %s: %w", id, err)
		}
	}
	return snap, nil
}

// Resolve maps a model reference to a local directory: an existing path is
// returned as is, a hub id "org/name[@revision]" is resolved with
// NewClient().Snapshot.
func Resolve(ctx context.Context, ref string) (string, error) {
	if _, err := os.Stat(ref); err == nil {
		return ref, nil
	}
	id, ok := ParseID(ref)
	if !ok {
		return "", fmt.Errorf("hub: %q is neither a directory nor a hub id (org/name[@revision])", ref)
	}
	return NewClient().Snapshot(ctx, id)
}

// writable checks that files can be created in dir.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// DefaultFiles selects the repository files to fetch by default: all except
// .gitattributes and, when model.safetensors or model.safetensors.index.json
// exists, the other weight formats (pytorch_model*.bin, tf_model.h5,
// flax_model.msgpack, rust_model.ot, *.onnx, onnx/, openvino/, coreml/).
func DefaultFiles(names []string) []string {
	st := slices.Contains(names, "model.safetensors") || slices.Contains(names, "model.safetensors.index.json")
	var out []string
	for _, n := range names {
		if n == ".gitattributes" || st && alternative(n) {
			continue
		}
		out = append(out, n)
	}
	return out
}

func alternative(n string) bool {
	switch n {
	case "tf_model.h5", "flax_model.msgpack", "rust_model.ot":
		return true
	}
	if strings.HasPrefix(n, "pytorch_model") && (strings.HasSuffix(n, ".bin") || strings.HasSuffix(n, ".bin.index.json")) {
		return true
	}
	return strings.HasSuffix(n, ".onnx") || strings.HasPrefix(n, "onnx/") ||
		strings.HasPrefix(n, "openvino/") || strings.HasPrefix(n, "coreml/")
}

func (c *Client) filter(names []string) []string {
	if c.AllowPatterns == nil {
		return DefaultFiles(names)
	}
	var out []string
	for _, n := range names {
		if slices.ContainsFunc(c.AllowPatterns, func(p string) bool { return match(p, n) }) {
			out = append(out, n)
		}
	}
	return out
}

// match reports whether name matches the shell pattern p as Python's fnmatch
// does for '*' and '?'.
func match(p, name string) bool {
	if strings.HasSuffix(p, "/") {
		p += "*"
	}
	var b strings.Builder
	b.WriteString("^")
	for _, r := range p {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	ok, err := regexp.MatchString(b.String()+"$", name)
	return err == nil && ok
}

func (c *Client) endpoint() string { return endpoint(c.Endpoint) }

// do sends a request to the hub with the token, following redirects if
// follow, and dropping the token on redirects to other hosts.
func (c *Client) do(ctx context.Context, method, u string, hdr http.Header, follow bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "toolret-hub/1")
	req.Header.Set("Accept-Encoding", "identity")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := http.DefaultClient
	if c.HTTP != nil {
		hc = c.HTTP
	}
	cl := *hc
	cl.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		switch {
		case !follow:
			return http.ErrUseLastResponse
		case len(via) >= 10:
			return errors.New("stopped after 10 redirects")
		case r.URL.Host != req.URL.Host:
			r.Header.Del("Authorization")
		}
		return nil
	}
	return cl.Do(req)
}

// unreachable is the error for a failed request of a model not in the cache.
func (c *Client) unreachable(ctx context.Context, id ID, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("hub: model %s: %w", id, err)
	}
	return fmt.Errorf("hub: model %s is %w %s and the hub at %s cannot be reached (%w): %s",
		id, ErrNotCached, c.cache(), c.endpoint(), err, hint(id))
}

// status is the error for an unexpected response about id or its file name.
func (c *Client) status(resp *http.Response, id ID, name string) error {
	what := fmt.Sprintf("model %s (revision %s)", id.Repo, id.rev())
	if name != "" {
		what = "file " + name + " of " + what
	}
	var err error
	switch code := resp.StatusCode; {
	case code == http.StatusNotFound:
		err = fmt.Errorf("hub: %s not found at %s", what, c.endpoint())
	case (code == http.StatusUnauthorized || code == http.StatusForbidden) && c.Token == "":
		err = fmt.Errorf("hub: %s at %s: %s: the model may be private or gated and need an access token: set HF_TOKEN",
			what, c.endpoint(), resp.Status)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		err = fmt.Errorf("hub: %s at %s: %s: the token (HF_TOKEN) is invalid or has no access to the model",
			what, c.endpoint(), resp.Status)
	default:
		err = fmt.Errorf("hub: %s at %s: unexpected status %s", what, c.endpoint(), resp.Status)
	}
	if m := resp.Header.Get("X-Error-Message"); m != "" {
		err = fmt.Errorf("%w (%s)", err, m)
	}
	return err
}

type info struct {
	Sha      string `json:"sha"`
	Siblings []struct {
		Name string `json:"rfilename"`
	} `json:"siblings"`
}

// info fetches the commit and file list of id.
func (c *Client) info(ctx context.Context, id ID) (*info, error) {
	u := c.endpoint() + "/api/models/" + id.Repo + "/revision/" + url.PathEscape(id.rev())
	resp, err := c.do(ctx, http.MethodGet, u, nil, true)
	if err != nil {
		return nil, c.unreachable(ctx, id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.status(resp, id, "")
	}
	var inf info
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&inf); err != nil {
		return nil, fmt.Errorf("hub: model %s: decoding the answer of %s: %w", id, u, err)
	}
	return &inf, nil
}

// file is the metadata of a repository file.
type file struct {
	name, url, etag, commit string
	size                    int64 // -1: unknown
}

// head fetches the metadata of the file name of id at revision rev, without
// following the redirect with which the hub answers for LFS files.
func (c *Client) head(ctx context.Context, id ID, rev, name string) (file, error) {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	f := file{name: name, size: -1}
	f.url = c.endpoint() + "/" + id.Repo + "/resolve/" + url.PathEscape(rev) + "/" + strings.Join(parts, "/")
	resp, err := c.do(ctx, http.MethodHead, f.url, nil, false)
	if err != nil {
		return f, c.unreachable(ctx, id, err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return f, c.status(resp, id, name)
	}
	h := resp.Header
	f.commit = h.Get("X-Repo-Commit")
	f.etag = h.Get("X-Linked-Etag")
	if f.etag == "" {
		f.etag = h.Get("ETag")
	}
	f.etag = strings.Trim(strings.TrimPrefix(f.etag, "W/"), `"`)
	if s := h.Get("X-Linked-Size"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
			f.size = n
		}
	} else if resp.StatusCode < 300 && resp.ContentLength >= 0 {
		f.size = resp.ContentLength
	}
	if !validEtag(f.etag) {
		return f, fmt.Errorf("hub: file %s of model %s: the hub at %s sent no usable ETag (%q)", name, id, c.endpoint(), f.etag)
	}
	return f, nil
}

// download fetches f into blob through blob.incomplete, resuming what an
// earlier download left there, and checks its content.
func (c *Client) download(ctx context.Context, id ID, f file, blob string) error {
	tmp := blob + ".incomplete"
	out, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("hub: downloading %s of model %s: %w", f.name, id, err)
	}
	defer out.Close()
	if err := c.fetch(ctx, id, f, out); err != nil {
		return fmt.Errorf("hub: downloading %s of model %s: %w", f.name, id, err)
	}
	fi, err := out.Stat()
	if err == nil {
		_, err = out.Seek(0, io.SeekStart)
	}
	if err != nil {
		return fmt.Errorf("hub: downloading %s of model %s: %w", f.name, id, err)
	}
	sha, git, n, err := digest(out, fi.Size())
	if err != nil {
		return fmt.Errorf("hub: checking %s of model %s: %w", f.name, id, err)
	}
	if m := mismatch(f.etag, f.size, n, sha, git); m != "" {
		out.Close()
		os.Remove(tmp)
		return fmt.Errorf("hub: file %s of model %s is corrupt: %s (download removed)", f.name, id, m)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("hub: downloading %s of model %s: %w", f.name, id, err)
	}
	if err := os.Rename(tmp, blob); err != nil {
		return fmt.Errorf("hub: downloading %s of model %s: %w", f.name, id, err)
	}
	return nil
}

// fetch appends to out, which holds a prefix of f, the rest of f, and syncs it.
func (c *Client) fetch(ctx context.Context, id ID, f file, out *os.File) error {
	n, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if f.size >= 0 && n > f.size {
		if n, err = 0, out.Truncate(0); err != nil {
			return err
		}
	}
	if n > 0 && n == f.size {
		return out.Sync()
	}
	hdr := http.Header{}
	if n > 0 {
		hdr.Set("Range", fmt.Sprintf("bytes=%d-", n))
	}
	resp, err := c.do(ctx, http.MethodGet, f.url, hdr, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && n > 0:
		if cr := resp.Header.Get("Content-Range"); !strings.HasPrefix(cr, fmt.Sprintf("bytes %d-", n)) {
			return fmt.Errorf("asked for bytes %d-, got Content-Range %q", n, cr)
		}
	case resp.StatusCode == http.StatusOK:
		if n > 0 {
			if _, err := out.Seek(0, io.SeekStart); err != nil {
				return err
			}
			if n, err = 0, out.Truncate(0); err != nil {
				return err
			}
		}
	default:
		return c.status(resp, id, f.name)
	}
	b := &bar{w: c.Progress, name: f.name, n: n, start: n, total: f.size, t0: time.Now()}
	_, err = io.Copy(out, io.TeeReader(resp.Body, b))
	b.done()
	if err != nil {
		return err
	}
	return out.Sync()
}

// bar is a one-line progress bar, updated at most ten times a second.
type bar struct {
	w               io.Writer
	name            string
	n, start, total int64
	t0, last        time.Time
}

func (b *bar) Write(p []byte) (int, error) {
	b.n += int64(len(p))
	if now := time.Now(); b.w != nil && now.Sub(b.last) >= 100*time.Millisecond {
		b.last = now
		b.print("")
	}
	return len(p), nil
}

func (b *bar) done() {
	if b.w != nil {
		b.print("\n")
	}
}

func (b *bar) print(end string) {
	rate := float64(b.n-b.start) / max(time.Since(b.t0).Seconds(), 1e-3)
	s := b.name + "  " + human(b.n)
	if b.total > 0 {
		s += fmt.Sprintf(" / %s %3d%%", human(b.total), b.n*100/b.total)
	}
	s += "  " + human(int64(rate)) + "/s"
	if b.total > b.n && rate > 0 && end == "" {
		s += "  ETA " + time.Duration(float64(b.total-b.n)/rate*float64(time.Second)).Round(time.Second).String()
	}
	fmt.Fprintf(b.w, "\r%-72s%s", s, end)
}

// human formats n bytes with a binary unit.
func human(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n)/1024, 0
	for f >= 1024 && i < 5 {
		f, i = f/1024, i+1
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTPE"[i])
}

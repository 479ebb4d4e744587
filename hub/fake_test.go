package hub

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHub answers as the hub does: the model API, the tree API (used by
// huggingface_hub), and HEAD/GET on resolve URLs, which for LFS files
// redirect to a second server standing for the CDN.
type fakeHub struct {
	repo    string
	refs    map[string]string // revision -> commit
	files   map[string][]byte
	ghost   []string        // listed by the API but not served
	bad     map[string]bool // served with wrong content
	status  int             // when not 0, every hub request fails with it
	noRange bool            // the CDN ignores Range headers
	hub     *httptest.Server
	cdn     *httptest.Server

	mu   sync.Mutex
	reqs []string // "METHOD path [range] [auth]"
}

// testFiles is a small model repository.
func testFiles() map[string][]byte {
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	return map[string][]byte{
		".gitattributes":          []byte("*.safetensors filter=lfs diff=lfs merge=lfs -text\n"),
		"config.json":             []byte(`{"model_type": "bert"}` + "\n"),
		"vocab.txt":               []byte("[PAD]\n[UNK]\nhello\n"),
		"model.safetensors":       big,
		"pytorch_model.bin":       []byte("pickled torch weights"),
		"onnx/model.onnx":         []byte("onnx graph"),
		"1_Pooling/config.json":   []byte(`{"pooling_mode_mean_tokens": true}`),
		"special_tokens_map.json": []byte("{}"),
	}
}

func commitOf(s string) string { return fmt.Sprintf("%x", sha1.Sum([]byte(s))) }

func newFake(t *testing.T) *fakeHub {
	h := &fakeHub{
		repo:  "org/model",
		files: testFiles(),
		bad:   map[string]bool{},
		refs: map[string]string{
			"main":      commitOf("main"),
			"v1.0":      commitOf("v1.0"),
			"refs/pr/1": commitOf("pr1"),
		},
	}
	h.hub = httptest.NewServer(http.HandlerFunc(h.serveHub))
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	t.Cleanup(h.hub.Close)
	t.Cleanup(h.cdn.Close)
	return h
}

func (h *fakeHub) client(cache string) *Client {
	return &Client{Endpoint: h.hub.URL, Cache: cache, HTTP: &http.Client{Timeout: time.Minute}}
}

func (h *fakeHub) log(r *http.Request, server string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := server + " " + r.Method + " " + r.URL.EscapedPath()
	if v := r.Header.Get("Range"); v != "" {
		s += " range=" + v
	}
	if v := r.Header.Get("Authorization"); v != "" {
		s += " auth=" + v
	}
	h.reqs = append(h.reqs, s)
}

func (h *fakeHub) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.reqs...)
}

func (h *fakeHub) reset() {
	h.mu.Lock()
	h.reqs = nil
	h.mu.Unlock()
}

func isLFSTest(name string) bool {
	return strings.HasSuffix(name, ".safetensors") || strings.HasSuffix(name, ".bin") || strings.HasSuffix(name, ".onnx")
}

func sha256Hex(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b)) }

func gitSHA1(b []byte) string {
	return fmt.Sprintf("%x", sha1.Sum(append([]byte(fmt.Sprintf("blob %d\x00", len(b))), b...)))
}

// etag is the blob name of file name.
func (h *fakeHub) etag(name string) string {
	if isLFSTest(name) {
		return sha256Hex(h.files[name])
	}
	return gitSHA1(h.files[name])
}

func (h *fakeHub) content(name string) []byte {
	b := bytes.Clone(h.files[name])
	if h.bad[name] {
		b[len(b)/2] ^= 0xff
	}
	return b
}

func (h *fakeHub) names() []string {
	var ns []string
	for n := range h.files {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

func (h *fakeHub) commit(rev string) (string, bool) {
	if c, ok := h.refs[rev]; ok {
		return c, true
	}
	for _, c := range h.refs {
		if c == rev {
			return c, true
		}
	}
	return "", false
}

func notFound(w http.ResponseWriter, code, msg string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	http.Error(w, msg, http.StatusNotFound)
}

func (h *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.log(r, "hub")
	if h.status != 0 {
		http.Error(w, "denied", h.status)
		return
	}
	p := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(p, "/api/models/"+h.repo+"/"); ok {
		kind, erev, _ := strings.Cut(rest, "/")
		rev, _ := url.PathUnescape(erev)
		commit, ok := h.commit(rev)
		if !ok {
			notFound(w, "RevisionNotFound", "Invalid rev id: "+rev)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch kind {
		case "revision":
			type sib struct {
				Name string `json:"rfilename"`
			}
			var sibs []sib
			for _, n := range append(h.names(), h.ghost...) {
				sibs = append(sibs, sib{n})
			}
			json.NewEncoder(w).Encode(map[string]any{
				"_id": "0123", "id": h.repo, "modelId": h.repo, "sha": commit, "private": false,
				"lastModified": "2024-01-02T03:04:05.000Z", "siblings": sibs,
			})
		case "tree":
			var list []map[string]any
			for _, n := range h.names() {
				e := map[string]any{"type": "file", "path": n, "size": len(h.files[n]), "oid": gitSHA1(h.files[n])}
				if isLFSTest(n) {
					e["lfs"] = map[string]any{"oid": h.etag(n), "size": len(h.files[n]), "pointerSize": 134}
				}
				list = append(list, e)
			}
			json.NewEncoder(w).Encode(list)
		default:
			http.NotFound(w, r)
		}
		return
	}
	if rest, ok := strings.CutPrefix(p, "/"+h.repo+"/resolve/"); ok {
		erev, efile, _ := strings.Cut(rest, "/")
		rev, _ := url.PathUnescape(erev)
		name, _ := url.PathUnescape(efile)
		commit, ok := h.commit(rev)
		if !ok {
			notFound(w, "RevisionNotFound", "Invalid rev id: "+rev)
			return
		}
		w.Header().Set("X-Repo-Commit", commit)
		if _, ok := h.files[name]; !ok {
			notFound(w, "EntryNotFound", "Entry not found")
			return
		}
		if isLFSTest(name) {
			w.Header().Set("X-Linked-Etag", `"`+h.etag(name)+`"`)
			w.Header().Set("X-Linked-Size", strconv.Itoa(len(h.files[name])))
			w.Header().Set("ETag", `W/"pointer-etag"`)
			http.Redirect(w, r, h.cdn.URL+"/lfs/"+h.etag(name)+"?sig=x", http.StatusFound)
			return
		}
		w.Header().Set("ETag", `"`+h.etag(name)+`"`)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(h.content(name)))
		return
	}
	notFound(w, "RepoNotFound", "Repository not found")
}

func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.log(r, "cdn")
	if h.noRange {
		r.Header.Del("Range")
	}
	sha := strings.TrimPrefix(r.URL.Path, "/lfs/")
	for n := range h.files {
		if isLFSTest(n) && h.etag(n) == sha {
			http.ServeContent(w, r, n, time.Time{}, bytes.NewReader(h.content(n)))
			return
		}
	}
	http.NotFound(w, r)
}

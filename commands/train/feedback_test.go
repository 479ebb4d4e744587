package traincmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/candidates"
	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/export/exporttest"
	"github.com/toolret/toolret/feedback"
	"github.com/toolret/toolret/llm"
)

// TestFeedbackCommand runs train feedback on a tiny dataset with a tiny bi-encoder run
// against a chat-completions server started here: the lines hold the bi-encoder's top -k of
// each instruction and three replies per refinement, the record holds the prompts, a re-run
// over the complete file or over the cache alone sends no request, and no file holds the key.
func TestFeedbackCommand(t *testing.T) {
	const key = "sk-cmd-feedback-SECRET-77"
	dir := t.TempDir()
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	sub := *d
	sub.Splits, sub.Scenes, sub.SceneIDs = map[string]*data.Split{}, nil, nil
	for _, name := range []string{"train", "test"} {
		src := d.Splits[name]
		dst := &data.Split{Name: name, Relevant: map[int][]int{}}
		for _, q := range src.Judged()[:3] {
			dst.Queries = append(dst.Queries, q)
			dst.Relevant[q] = src.Relevant[q]
		}
		sub.Splits[name] = dst
	}
	dataDir := filepath.Join(dir, "data")
	if err := data.WriteBEIR(&sub, dataDir); err != nil {
		t.Fatal(err)
	}
	bk, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "be")
	if err := exporttest.WriteRun(run, exporttest.Options{Hidden: 16, Layers: 1, Heads: 2}, bk, 3); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, "bad key", http.StatusUnauthorized)
			return
		}
		var req struct{ Messages []llm.Message }
		json.NewDecoder(r.Body).Decode(&req)
		reply := "noted"
		if len(req.Messages) == 5 { // the refinement: refine once, then N/A
			reply = `{"refined_instruction": "N/A"}`
			if !strings.Contains(req.Messages[0].Content, "(step by step)") {
				_, rest, _ := strings.Cut(req.Messages[0].Content, "User instruction:\n")
				instr, _, _ := strings.Cut(rest, "\n\n")
				reply = fmt.Sprintf(`{"refined_instruction": %q}`, instr+" (step by step)")
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": reply}}}})
	}))
	defer srv.Close()
	t.Setenv(llm.KeyEnv, key)
	out := filepath.Join(dir, "fb", "feedback.jsonl")
	os.MkdirAll(filepath.Dir(out), 0o755)
	args := []string{"-data", dataDir, "-first-stage", run, "-llm-url", srv.URL + "/v1", "-llm-model", "tiny", "-iterations", "2", "-k", "4", "-out", out, "-quiet"}
	if err := feedbackCmd(args); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var lines []feedback.Line
	for _, s := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l feedback.Line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	// 6 queries: iteration 0 refined, iteration 1 answered N/A: 2 lines and 6 requests each.
	if len(lines) != 12 || n.Load() != 36 {
		t.Fatalf("%d lines, %d requests; want 12, 36", len(lines), n.Load())
	}
	ld, err := data.Load(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	rk, _, err := candidates.Open(candidates.Source{Kind: "bi-encoder", Run: run}, ld, nil, bk)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		want, err := rk.Rank(context.Background(), []string{l.Query}, 4)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, ti := range want[0].Tools {
			ids = append(ids, ld.Tools[ti].ID)
		}
		if strings.Join(ids, ",") != strings.Join(l.Retrieved, ",") {
			t.Errorf("line %d: retrieved %v, the bi-encoder ranks %v", i, l.Retrieved, ids)
		}
		wantReason := []string{"", feedback.ReasonNA}[l.Iteration]
		if len(l.Replies) != 3 || l.Reason != wantReason || (l.Iteration == 0) != (l.Refined == l.Query+" (step by step)") {
			t.Errorf("line %d: %+v", i, l)
		}
	}
	var h feedback.Header
	hb, err := os.ReadFile(out + feedback.ConfigSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(hb, &h); err != nil {
		t.Fatal(err)
	}
	if h.Prompts[feedback.RefinementFile] != feedback.DefaultPrompts()[feedback.RefinementFile] || h.Settings["llm-model"] != "tiny" || h.K != 4 || h.Iterations != 2 {
		t.Errorf("record %+v", h)
	}
	// Complete: a re-run sends nothing. Over the cache alone: nothing either, same file.
	n.Store(0)
	if err := feedbackCmd(args); err != nil {
		t.Fatal(err)
	}
	os.Remove(out)
	if err := feedbackCmd(args); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(out); n.Load() != 0 || !bytes.Equal(again, b) {
		t.Errorf("re-runs sent %d requests; same file %v", n.Load(), bytes.Equal(again, b))
	}
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if c, _ := os.ReadFile(p); bytes.Contains(c, []byte(key)) {
				t.Errorf("%s holds the API key", p)
			}
		}
		return err
	})
	// Resuming with other settings is refused.
	if err := feedbackCmd(append(args, "-k", "5")); err == nil || !strings.Contains(err.Error(), "k: file has 4, now 5") {
		t.Errorf("-k 5 on a -k 4 file: %v", err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"prf without a model", []string{"-rewriter", "prf"}, "-rewriter prf needs -prf-model"},
		{"unknown refiner", []string{"-rewriter", "gpt"}, `-rewriter "gpt": want llm`},
		{"no out", []string{"-out", ""}, "-out FILE is required"},
		{"no retriever", []string{"-first-stage", ""}, "-first-stage RUN is required"},
		{"no url", []string{"-llm-url", ""}, "-llm-url and -llm-model are required"},
		{"bad url", []string{"-llm-url", "127.0.0.1:8080"}, "want http"},
		{"k 0", []string{"-k", "0"}, "-k 0"},
		{"iterations 0", []string{"-iterations", "0"}, "-iterations 0"},
		{"timeout 0", []string{"-llm-timeout", "0s"}, "-llm-timeout 0s"},
		{"retries -1", []string{"-llm-retries", "-1"}, "-llm-retries -1"},
		{"unknown split", []string{"-split", "dev"}, `no split "dev"`},
		{"empty split", []string{"-split", ","}, "no split"},
		{"missing run", []string{"-first-stage", filepath.Join(dir, "missing")}, "missing"},
		{"missing prompts", []string{"-prompts", filepath.Join(dir, "none")}, "-prompts"},
		{"stray argument", []string{"extra"}, "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := append([]string{}, args...)
			a = append(a, "-out", filepath.Join(t.TempDir(), "x.jsonl"))
			a = append(a, tc.args...)
			if err := feedbackCmd(a); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

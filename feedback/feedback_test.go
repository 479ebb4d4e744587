package feedback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/llm"
	"github.com/toolret/toolret/rank"
	"github.com/toolret/toolret/rank/bm25"
)

const testKey = "sk-feedback-test-SECRET-4242"

// small returns the embedded dataset with its first nTrain judged train queries and nTest
// judged test queries as the splits.
func small(t *testing.T, nTrain, nTest int) *data.Dataset {
	t.Helper()
	d, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	s := *d
	s.Splits = map[string]*data.Split{}
	for name, n := range map[string]int{"train": nTrain, "test": nTest} {
		src := d.Splits[name]
		dst := &data.Split{Name: name, Relevant: map[int][]int{}}
		for _, q := range src.Judged()[:n] {
			dst.Queries = append(dst.Queries, q)
			dst.Relevant[q] = src.Relevant[q]
		}
		s.Splits[name] = dst
	}
	return &s
}

func ranker(d *data.Dataset) rank.Ranker {
	texts := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		texts[i] = t.Text
	}
	return bm25.New(texts, bm25.DefaultParams)
}

// request is what the fake server saw.
type request struct {
	roles    []string
	contents []string
	json     bool
}

// server is a chat-completions server whose replies a test scripts by step (1, 2, 3: the
// number of user messages) and instruction (read back from the comprehension prompt).
type server struct {
	*httptest.Server
	mu    sync.Mutex
	reqs  []request
	n     atomic.Int64
	reply func(step int, instruction string) string
	// status, when set, answers a request with an HTTP error instead (code 0: answer).
	status func(step int, instruction string) (int, string)
	// onRequest is called with the request count before answering (set with hook).
	onRequest atomic.Pointer[func(n int64)]
}

func (s *server) hook(f func(int64)) {
	if f == nil {
		s.onRequest.Store(nil)
		return
	}
	s.onRequest.Store(&f)
}

func newServer(t *testing.T, reply func(step int, instruction string) string) *server {
	s := &server{reply: reply}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.n.Add(1)
		if f := s.onRequest.Load(); f != nil {
			(*f)(n)
		}
		if r.Header.Get("Authorization") != "Bearer "+testKey {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		var body struct {
			Messages       []llm.Message  `json:"messages"`
			ResponseFormat map[string]any `json:"response_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("request: %v", err)
		}
		rq := request{json: body.ResponseFormat != nil}
		step := 0
		for _, m := range body.Messages {
			rq.roles = append(rq.roles, m.Role)
			rq.contents = append(rq.contents, m.Content)
			if m.Role == "user" {
				step++
			}
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, rq)
		s.mu.Unlock()
		instr := instruction(body.Messages[0].Content)
		if s.status != nil {
			if code, msg := s.status(step, instr); code != 0 {
				http.Error(w, msg, code)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0,
			"message": map[string]any{"role": "assistant", "content": s.reply(step, instr)}}}})
	}))
	t.Cleanup(s.Close)
	return s
}

// instruction reads the instruction back from a comprehension prompt.
func instruction(prompt string) string {
	_, rest, _ := strings.Cut(prompt, "User instruction:\n")
	instr, _, _ := strings.Cut(rest, "\n\n")
	return instr
}

// script refines an instruction by appending " more" and stops some instructions with N/A
// (a function of the instruction's hash) and every one refined twice.
func script(step int, instr string) string {
	switch step {
	case 1:
		return "Goals of: " + instr
	case 2:
		return "Assessment of: " + instr
	}
	h := fnv.New32a()
	h.Write([]byte(instr))
	if h.Sum32()%4 == 0 || strings.Count(instr, " more") >= 2 {
		return `{"refined_instruction": "N/A"}`
	}
	return fmt.Sprintf(`{"refined_instruction": %q}`, instr+" more")
}

type env struct {
	d     *data.Dataset
	srv   *server
	dir   string
	cache string
}

func newEnv(t *testing.T, nTrain, nTest int, reply func(int, string) string) *env {
	dir := t.TempDir()
	return &env{d: small(t, nTrain, nTest), srv: newServer(t, reply), dir: dir, cache: filepath.Join(dir, "llm-cache")}
}

func (e *env) client(t *testing.T) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{URL: e.srv.URL + "/v1", Model: "tiny", Key: testKey, Timeout: 5 * time.Second, Retries: 2,
		Backoff: 5 * time.Millisecond, Concurrency: 3, Cache: e.cache})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *env) config(t *testing.T, out string, k, iterations int) Config {
	t.Helper()
	c := e.client(t)
	r, err := NewLLM(c, DefaultPrompts(), LLMOptions{JSON: true, MaxTokens: 256})
	if err != nil {
		t.Fatal(err)
	}
	return Config{Data: e.d, Ranker: ranker(e.d), Rewriter: r, Splits: []string{"train", "test"}, K: k, Iterations: iterations,
		Out: out, Settings: map[string]string{"refiner": "llm", "model": "tiny"}, Prompts: DefaultPrompts(),
		Info: map[string]string{"url": e.srv.URL}, Concurrency: c.Concurrency(), Chunk: 2}
}

func readLines(t *testing.T, path string) []Line {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ls []Line
	n, err := scan(path, bytes.NewReader(b), func(_ int, l Line) error { ls = append(ls, l); return nil })
	if err != nil || n != int64(len(b)) {
		t.Fatalf("%s: %v (%d of %d bytes)", path, err, n, len(b))
	}
	return ls
}

// TestExchange: each iteration is one conversation of three requests (1, 3 and 5 messages,
// user/assistant alternating) whose first prompt shows the instruction and the retrieved
// tools with category, names, description and parameters, whose later turns carry the
// model's earlier replies, and whose refinement alone asks for JSON; each refined instruction
// is the next iteration's query, retrieved again.
func TestExchange(t *testing.T) {
	e := newEnv(t, 1, 2, func(step int, instr string) string {
		if step == 3 {
			return fmt.Sprintf(`{"refined_instruction": %q}`, instr+" then email it")
		}
		return fmt.Sprintf("reply %d about %s", step, instr)
	})
	out := filepath.Join(e.dir, "fb.jsonl")
	cfg := e.config(t, out, 3, 2)
	cfg.Concurrency, cfg.Chunk = 1, 1 // requests in order
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	const queries, T = 3, 2
	if sum.Queries != queries || sum.Lines != queries*(T+1) || sum.Reasons[ReasonIterations] != queries || sum.Refinements != queries*T {
		t.Errorf("summary %+v", sum)
	}
	e.srv.mu.Lock()
	reqs := e.srv.reqs
	e.srv.mu.Unlock()
	if len(reqs) != 3*queries*T {
		t.Fatalf("server saw %d requests, want 3 per query and iteration = %d", len(reqs), 3*queries*T)
	}
	prompts := DefaultPrompts()
	tools := Tools(e.d)
	lines := readLines(t, out)
	if len(lines) != queries*(T+1) {
		t.Fatalf("%d lines", len(lines))
	}
	rk := ranker(e.d)
	r := 0
	for i, l := range lines {
		want, err := rk.Rank(context.Background(), []string{l.Query}, 3)
		if err != nil {
			t.Fatal(err)
		}
		for j, ti := range want[0].Tools {
			if l.Retrieved[j] != tools[ti].ID {
				t.Errorf("line %d: retrieved %v, BM25 of %q gives tool %s at %d", i, l.Retrieved, l.Query, tools[ti].ID, j)
			}
		}
		if l.Iteration == T {
			if !l.Stop || l.Reason != ReasonIterations || len(l.Replies) != 0 {
				t.Errorf("line %d: %+v", i, l)
			}
			continue
		}
		if l.Refined != l.Query+" then email it" || l.Stop || lines[i+1].Query != l.Refined || lines[i+1].Iteration != l.Iteration+1 {
			t.Errorf("line %d: %+v, next %+v", i, l, lines[i+1])
		}
		if l.Iteration == 0 && l.Query != e.d.Queries[e.d.QueryIndex[l.QueryID]].Text {
			t.Errorf("line %d: q^0 %q is not the query's text", i, l.Query)
		}
		// The three requests of this iteration.
		for step := 1; step <= 3; step++ {
			rq := reqs[r]
			r++
			wantRoles := []string{"user", "assistant", "user", "assistant", "user"}[:2*step-1]
			if strings.Join(rq.roles, ",") != strings.Join(wantRoles, ",") {
				t.Fatalf("line %d step %d: roles %v, want %v", i, step, rq.roles, wantRoles)
			}
			if rq.json != (step == 3) {
				t.Errorf("line %d step %d: response_format %v", i, step, rq.json)
			}
			first := rq.contents[0]
			if instruction(first) != l.Query || !strings.Contains(first, "Step 1 - comprehension") {
				t.Errorf("line %d: comprehension prompt %q does not show q^t %q", i, first, l.Query)
			}
			for j, id := range l.Retrieved {
				tl := tools[e.d.ToolIndex[id]]
				entry := fmt.Sprintf("%d. category: %s | tool: %s | API: %s | id: %s\n   description: %s\n   parameters: %s", j+1, tl.Category, tl.Name, tl.API, id, tl.Description, tl.Parameters)
				if tl.Category == "" || tl.Description == "" || !strings.Contains(tl.Parameters, "required)") || !strings.Contains(first, entry) {
					t.Errorf("line %d: prompt lacks tool %s as\n%s\nprompt:\n%s", i, id, entry, first)
				}
			}
			if step >= 2 {
				if rq.contents[1] != l.Replies[0].Text || rq.contents[2] != strings.TrimSpace(prompts[AssessmentFile]) {
					t.Errorf("line %d step %d: messages %q", i, step, rq.contents)
				}
			}
			if step == 3 && (rq.contents[3] != l.Replies[1].Text || rq.contents[4] != strings.TrimSpace(prompts[RefinementFile])) {
				t.Errorf("line %d step 3: messages %q", i, rq.contents)
			}
		}
		if len(l.Replies) != 3 || l.Replies[0].Step != "comprehension" || l.Replies[1].Step != "assessment" || l.Replies[2].Step != "refinement" ||
			l.Replies[0].Text != "reply 1 about "+l.Query {
			t.Errorf("line %d replies %+v", i, l.Replies)
		}
	}
	// The run records its prompts and settings beside the output.
	var h Header
	b, err := os.ReadFile(out + ConfigSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	if h.K != 3 || h.Iterations != T || h.Prompts[RefinementFile] != prompts[RefinementFile] || h.Fingerprint != e.d.Fingerprint() || h.Settings["model"] != "tiny" {
		t.Errorf("header %+v", h)
	}
}

// TestStops: "N/A" (in its forms) stops the loop after one iteration; a malformed or empty
// reply is recorded in the line and counted, never fatal; an echoed instruction stops.
func TestStops(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reply    string // the refinement reply ("" at step 1 with emptyStep1)
		step1    string // the comprehension reply, default "ok"
		reason   string
		err      string
		requests int // per query
	}{
		{name: "json N/A", reply: `{"refined_instruction": "N/A"}`, reason: ReasonNA, requests: 3},
		{name: "plain N/A", reply: "N/A", reason: ReasonNA, requests: 3},
		{name: "N/A with reason", reply: "N/A. The retrieved tools cover every goal in order.", reason: ReasonNA, requests: 3},
		{name: "labelled N/A", reply: "Refined instruction: **N/A**", reason: ReasonNA, requests: 3},
		{name: "fenced N/A", reply: "```json\n{\"refined_instruction\": \"n/a\"}\n```", reason: ReasonNA, requests: 3},
		{name: "malformed", reply: "The tools look fine.\n\nBut the order could be better.", reason: ReasonError, err: "no refined instruction or N/A found", requests: 3},
		{name: "json without the field", reply: `{"a": 1, "b": 2}`, reason: ReasonError, err: "without refined_instruction", requests: 3},
		{name: "empty refinement", reply: "  ", reason: ReasonError, err: "refinement: empty reply", requests: 3},
		{name: "empty comprehension", step1: " ", reason: ReasonError, err: "comprehension: empty reply", requests: 1},
		{name: "echo", reply: "{echo}", reason: ReasonUnchanged, requests: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, 2, func(step int, instr string) string {
				switch {
				case step == 1 && tc.step1 != "":
					return tc.step1
				case step < 3:
					return "ok"
				case tc.reply == "{echo}":
					return fmt.Sprintf(`{"refined_instruction": %q}`, " "+instr+" ")
				}
				return tc.reply
			})
			out := filepath.Join(e.dir, "fb.jsonl")
			sum, err := Run(context.Background(), e.config(t, out, 3, 3))
			if err != nil {
				t.Fatal(err)
			}
			lines := readLines(t, out)
			if len(lines) != 3 || e.srv.n.Load() != int64(3*tc.requests) || sum.Reasons[tc.reason] != 3 {
				t.Fatalf("%d lines, %d requests, summary %+v; want 3 lines, %d requests, 3 %s", len(lines), e.srv.n.Load(), sum, 3*tc.requests, tc.reason)
			}
			for _, l := range lines {
				if !l.Stop || l.Reason != tc.reason || l.Refined != "" || !strings.Contains(l.Error, tc.err) || (tc.err == "") != (l.Error == "") || len(l.Replies) != tc.requests {
					t.Errorf("line %+v", l)
				}
			}
		})
	}
}

// TestMixed: a malformed reply for one query ends that query's loop only.
func TestMixed(t *testing.T) {
	d := small(t, 0, 3)
	bad := d.Queries[d.Splits["test"].Queries[1]].Text
	e := newEnv(t, 0, 3, func(step int, instr string) string {
		if step == 3 && instr == bad {
			return "I am not sure.\n\nMaybe."
		}
		return script(step, instr)
	})
	out := filepath.Join(e.dir, "fb.jsonl")
	cfg := e.config(t, out, 3, 2)
	cfg.Splits = []string{"test"}
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var errs, others int
	for _, l := range readLines(t, out) {
		if l.Query == bad {
			errs++
			if l.Reason != ReasonError {
				t.Errorf("bad query: %+v", l)
			}
		} else {
			others++
		}
	}
	if errs != 1 || others < 2 || sum.Reasons[ReasonError] != 1 || sum.Reasons[ReasonError]+sum.Reasons[ReasonNA]+sum.Reasons[ReasonIterations] != 3 {
		t.Errorf("%d error lines, %d others, summary %+v", errs, others, sum)
	}
}

func TestParseRefinement(t *testing.T) {
	for _, tc := range []struct {
		in      string
		refined string
		stop    bool
		err     string
	}{
		{`{"refined_instruction": "Find recipes, then convert grams to cups"}`, "Find recipes, then convert grams to cups", false, ""},
		{"Sure!\n```json\n{\"refined_instruction\": \"  Book a flight\\n and a hotel \"}\n```", "Book a flight and a hotel", false, ""},
		{`{"refined": "Check the weather"}`, "Check the weather", false, ""},
		{`{"answer": "Check the weather"}`, "Check the weather", false, ""},
		{`{"refined_instruction": null}`, "", true, ""},
		{`{"refined_instruction": "N/A."}`, "", true, ""},
		{`{"refined_instruction": ""}`, "", false, "empty refined_instruction"},
		{`{"refined_instruction": 3}`, "", false, "not a string"},
		{`{"a": "x", "b": "y"}`, "", false, "without refined_instruction"},
		{"N/A", "", true, ""},
		{"\"N/A\"", "", true, ""},
		{"n/a - all goals are covered", "", true, ""},
		{"NA", "", true, ""},
		{"N/Abc is a tool", "N/Abc is a tool", false, ""},
		{"<think>the user wants N/A?</think>\nRefined instruction: Get the stock price of AAPL", "Get the stock price of AAPL", false, ""},
		{"Here is my answer.\n\nRefined instruction:\nTranslate the text to French\nand read it aloud\n\nHope this helps.", "Translate the text to French and read it aloud", false, ""},
		{"**Refined Instruction:** Send an SMS", "Send an SMS", false, ""},
		{"New query: N/A", "", true, ""},
		{"\"Convert 100 USD to EUR, then show the rate history\"", "Convert 100 USD to EUR, then show the rate history", false, ""},
		{"", "", false, "empty reply"},
		{"```\n```", "", false, "empty reply"},
		{"First paragraph.\n\nSecond paragraph.", "", false, "no refined instruction"},
		{"Refined instruction:", "", false, "label without an instruction"},
	} {
		refined, stop, err := ParseRefinement(tc.in)
		if refined != tc.refined || stop != tc.stop || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseRefinement(%q) = %q, %v, %v; want %q, %v, %q", tc.in, refined, stop, err, tc.refined, tc.stop, tc.err)
		}
	}
}

// TestResume: a collection stopped midway (its context cancelled, or its file cut mid-line,
// also inside a query's loop) and resumed with the same settings gives the file of an
// uninterrupted run; resuming from the cache of the uninterrupted run sends no request.
func TestResume(t *testing.T) {
	e := newEnv(t, 2, 4, script)
	full := filepath.Join(e.dir, "full.jsonl")
	if _, err := Run(context.Background(), e.config(t, full, 3, 3)); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, full)
	var refined, na bool
	for _, l := range lines {
		refined = refined || l.Refined != ""
		na = na || l.Reason == ReasonNA
	}
	if !refined || !na || len(lines) < 8 {
		t.Fatalf("the script should refine and stop: %d lines", len(lines))
	}

	t.Run("cancelled", func(t *testing.T) {
		// Another cache: the interrupted run pays for its requests again.
		e2 := *e
		e2.cache = filepath.Join(t.TempDir(), "cache")
		out := filepath.Join(t.TempDir(), "fb.jsonl")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Cancel once a chunk is written: the run is killed inside a later one.
		e2.srv.hook(func(int64) {
			if st, err := os.Stat(out); err == nil && st.Size() > 0 {
				cancel()
			}
		})
		e2.srv.n.Store(0)
		_, err := Run(ctx, e2.config(t, out, 3, 3))
		e2.srv.hook(nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted run: %v", err)
		}
		part, _ := os.ReadFile(out)
		if len(part) == 0 || len(part) >= len(want) || !bytes.HasPrefix(want, part) {
			t.Fatalf("interrupted run wrote %d bytes of %d (want a proper prefix)", len(part), len(want))
		}
		sum, err := Run(context.Background(), e2.config(t, out, 3, 3))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(out)
		if !bytes.Equal(got, want) {
			t.Errorf("resumed file differs from the uninterrupted one:\n%s\nwant\n%s", got, want)
		}
		if sum.Resumed == 0 || sum.Written == 0 || sum.Lines != len(lines) {
			t.Errorf("summary %+v", sum)
		}
	})

	// The offset of the first line of a query's iteration 1 (its second line).
	second := 0
	for i, off := 0, 0; i < len(lines); i++ {
		if lines[i].Iteration == 1 {
			second = off
			break
		}
		off += bytes.IndexByte(want[off:], '\n') + 1
	}
	if second == 0 {
		t.Fatal("no query has a second line")
	}
	for _, tc := range []struct {
		name string
		cut  int
	}{
		{"cut in the middle", len(want)/2 + 3},
		{"cut inside a query's second line", second + 10},
		{"cut before the last newline", len(want) - 1},
		{"empty", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cut > 0 && want[tc.cut-1] == '\n' {
				t.Fatalf("cut %d is on a line boundary", tc.cut)
			}
			dir := t.TempDir()
			out := filepath.Join(dir, "fb.jsonl")
			if err := os.WriteFile(out, want[:tc.cut], 0o644); err != nil {
				t.Fatal(err)
			}
			hb, _ := os.ReadFile(full + ConfigSuffix)
			if err := os.WriteFile(out+ConfigSuffix, hb, 0o644); err != nil {
				t.Fatal(err)
			}
			e.srv.n.Store(0)
			if _, err := Run(context.Background(), e.config(t, out, 3, 3)); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, want) {
				t.Errorf("resumed file differs:\n%s\nwant\n%s", got, want)
			}
			if e.srv.n.Load() != 0 {
				t.Errorf("resume sent %d requests; all replies were cached", e.srv.n.Load())
			}
		})
	}
}

// TestCacheRerun: a second collection over the same cache sends no request and writes the
// same file.
func TestCacheRerun(t *testing.T) {
	e := newEnv(t, 2, 3, script)
	out := filepath.Join(e.dir, "a.jsonl")
	if _, err := Run(context.Background(), e.config(t, out, 4, 2)); err != nil {
		t.Fatal(err)
	}
	if e.srv.n.Load() == 0 {
		t.Fatal("no request")
	}
	e.srv.n.Store(0)
	out2 := filepath.Join(e.dir, "b.jsonl")
	cfg := e.config(t, out2, 4, 2)
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if n := e.srv.n.Load(); n != 0 {
		t.Errorf("second run: server saw %d requests, want 0", n)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out2)
	if !bytes.Equal(a, b) {
		t.Errorf("second run wrote another file")
	}
	if st := cfg.Rewriter.(*LLM).client.(*llm.Client).Stats(); st.Requests != 0 || st.CacheHits == 0 {
		t.Errorf("client stats %+v", st)
	}
}

// TestKeyNeverWritten: the API key is in no file of the output or cache directories, even
// when a server echoes it in a refusal that is recorded in a line.
func TestKeyNeverWritten(t *testing.T) {
	d := small(t, 1, 2)
	tooLong := d.Queries[d.Splits["test"].Queries[0]].Text
	e := newEnv(t, 1, 2, script)
	e.srv.status = func(step int, instr string) (int, string) {
		if step == 2 && instr == tooLong {
			return http.StatusBadRequest, "This model's maximum context length is 8 tokens (request from Bearer " + testKey + ")"
		}
		return 0, ""
	}
	out := filepath.Join(e.dir, "fb.jsonl")
	sum, err := Run(context.Background(), e.config(t, out, 3, 2))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Reasons[ReasonError] != 1 {
		t.Errorf("summary %+v: want one refused request recorded", sum)
	}
	var refused bool
	for _, l := range readLines(t, out) {
		if l.Reason == ReasonError {
			refused = strings.Contains(l.Error, "assessment: request refused: ") && strings.Contains(l.Error, "[redacted]")
		}
	}
	if !refused {
		t.Errorf("the refused request is not recorded as such")
	}
	files := 0
	err = filepath.WalkDir(e.dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(testKey)) {
			t.Errorf("%s holds the API key", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Errorf("%d files written", files)
	}
	// The server checks the key: a wrong one is a refusal that stops the run, not a line.
	c, _ := llm.New(llm.Config{URL: e.srv.URL + "/v1", Model: "tiny", Key: "wrong", Cache: t.TempDir()})
	r, _ := NewLLM(c, DefaultPrompts(), LLMOptions{})
	cfg := e.config(t, filepath.Join(t.TempDir(), "x.jsonl"), 3, 2)
	cfg.Rewriter = r
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("wrong key: %v", err)
	}
}

// TestRefusals: another collection's settings, a file without its record, and a damaged line
// that is not the last are refused with a message naming them.
func TestRefusals(t *testing.T) {
	e := newEnv(t, 1, 2, script)
	out := filepath.Join(e.dir, "fb.jsonl")
	if _, err := Run(context.Background(), e.config(t, out, 3, 2)); err != nil {
		t.Fatal(err)
	}
	other := DefaultPrompts()
	other[RefinementFile] += "\nBe brief."
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"k", func(c *Config) { c.K = 4 }, "k: file has 3, now 4"},
		{"iterations", func(c *Config) { c.Iterations = 3 }, "iterations: file has 2, now 3"},
		{"splits", func(c *Config) { c.Splits = []string{"test"} }, "splits:"},
		{"model", func(c *Config) { c.Settings = map[string]string{"refiner": "llm", "model": "big"} }, `model: file has "tiny", now "big"`},
		{"prompt", func(c *Config) { c.Prompts = other }, "prompt refinement.txt"},
		{"duplicate split", func(c *Config) { c.Splits = []string{"test", "test"} }, `split "test" given twice`},
		{"unknown split", func(c *Config) { c.Splits = []string{"dev"} }, `no split "dev"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := e.config(t, out, 3, 2)
			tc.mod(&cfg)
			if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
	b, _ := os.ReadFile(out)
	t.Run("no record", func(t *testing.T) {
		o := filepath.Join(t.TempDir(), "x.jsonl")
		os.WriteFile(o, b, 0o644)
		if _, err := Run(context.Background(), e.config(t, o, 3, 2)); err == nil || !strings.Contains(err.Error(), ConfigSuffix+" does not") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("damaged line", func(t *testing.T) {
		o := filepath.Join(t.TempDir(), "x.jsonl")
		ls := strings.SplitAfter(string(b), "\n")
		ls[1] = "{garbage\n"
		os.WriteFile(o, []byte(strings.Join(ls, "")), 0o644)
		hb, _ := os.ReadFile(out + ConfigSuffix)
		os.WriteFile(o+ConfigSuffix, hb, 0o644)
		if _, err := Run(context.Background(), e.config(t, o, 3, 2)); err == nil || !strings.Contains(err.Error(), "x.jsonl:2:") {
			t.Errorf("err %v", err)
		}
	})
}

func TestToolOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		tool data.Tool
		want Tool
	}{
		{"toolbench text", data.Tool{ID: "7", Category: "Food", ToolName: "Recipes", APIName: "Search",
			Text: `category_name:Food, tool_name:Recipes, api_name:Search, api_description:Find recipes, by name, required_params: [{"name": "q", "type": "STRING", "description": "dish"}], optional_params: [{"name": "n", "type": "NUMBER", "description": ""}], return_schema: {}`},
			Tool{Index: 3, ID: "7", Category: "Food", Name: "Recipes", API: "Search", Description: "Find recipes, by name", Parameters: "q (STRING, required): dish; n (NUMBER, optional)"}},
		{"plain text", data.Tool{ID: "x", Title: "Calculator", Text: "Evaluates arithmetic."},
			Tool{Index: 3, ID: "x", Name: "Calculator", Description: "Evaluates arithmetic."}},
		{"schema metadata", data.Tool{ID: "y", Text: "Sends mail.", Metadata: map[string]any{"parameters": map[string]any{
			"type": "object", "required": []any{"to"}, "properties": map[string]any{"to": map[string]any{"type": "string", "description": "address"}, "cc": map[string]any{"type": "string"}}}}},
			Tool{Index: 3, ID: "y", Name: "y", Description: "Sends mail.", Parameters: "cc (string, optional); to (string, required): address"}},
		{"metadata lists", data.Tool{ID: "z", Text: "t", Metadata: map[string]any{"required_parameters": []any{map[string]any{"name": "a", "type": "int"}}, "optional_parameters": []any{"b"}}},
			Tool{Index: 3, ID: "z", Name: "z", Description: "t", Parameters: "a (int, required); b (optional)"}},
	} {
		if got := ToolOf(3, tc.tool); got != tc.want {
			t.Errorf("%s: ToolOf = %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// TestScan: what of an output counts as written: complete lines; a last line that is torn
// (no newline) or unreadable (a crash may leave zeros) is cut; an unreadable line followed by
// others is an error naming it.
func TestScan(t *testing.T) {
	a, b := `{"query_id":"1","iteration":0}`+"\n", `{"query_id":"2","iteration":0}`+"\n"
	for _, tc := range []struct {
		name  string
		in    string
		good  int
		lines int
		err   string
	}{
		{"complete", a + b, len(a + b), 2, ""},
		{"torn", a + b[:10], len(a), 1, ""},
		{"unreadable last line", a + "{garbage\n", len(a), 1, ""},
		{"zero-filled tail", a + "\x00\x00\x00\x00", len(a), 1, ""},
		{"zero-filled last line", a + "\x00\x00\n", len(a), 1, ""},
		{"no query id", a + "{}\n", len(a), 1, ""},
		{"unreadable line in the middle", a + "{garbage\n" + b, 0, 0, "out.jsonl:2:"},
		{"unreadable line before a torn one", "{garbage\n" + b[:5], 0, 0, "out.jsonl:1:"},
		{"empty", "", 0, 0, ""},
	} {
		var n int
		good, err := scan("out.jsonl", strings.NewReader(tc.in), func(int, Line) error { n++; return nil })
		if good != int64(tc.good) || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) || err == nil && n != tc.lines {
			t.Errorf("%s: good %d, %d lines, err %v; want %d, %d, %q", tc.name, good, n, err, tc.good, tc.lines, tc.err)
		}
	}
}

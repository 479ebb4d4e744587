package serve

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docsBlocks returns the ```sh blocks of docs/serve.md: the one that starts the server and
// the one of curl examples.
func docsBlocks(t *testing.T) (server, curls string) {
	t.Helper()
	b, err := os.ReadFile("../docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		switch {
		case strings.Contains(m[1], "serve -index") && server == "":
			server = m[1]
		case strings.Contains(m[1], "curl -s localhost:8080/v1/retrieve") && curls == "":
			curls = m[1]
		}
	}
	if server == "" || curls == "" {
		t.Fatal("docs/serve.md: no block starting the server, or none of curl examples")
	}
	return server, curls
}

// docsPrelude stubs the commands of the docs' blocks in bash: go (and toolret) record the
// TOOLRET_TOKEN the server would see in $DOC/token and wait for $DOC/url; curl sends to
// that URL instead of localhost:8080 and prints the HTTP status after each answer.
const docsPrelude = `
stub() {
  case " $* " in
  *" ./cmd/serve "*|*" serve "*)
    printenv TOOLRET_TOKEN > "$DOC/token.tmp"; mv "$DOC/token.tmp" "$DOC/token"
    while [ ! -s "$DOC/url" ]; do sleep 0.02; done;;
  esac
}
go() { stub "$@"; }
toolret() { stub serve "$@"; }
curl() {
  local u a=() x
  while [ ! -s "$DOC/url" ]; do sleep 0.02; done
  u=$(cat "$DOC/url")
  for x in "$@"; do a+=("${x//localhost:8080/$u}"); done
  command curl -sS -w '\n@@status %{http_code}\n' "${a[@]}"
}
`

// TestDocsCurl runs docs/serve.md's blocks as written, in one bash: the server's (its go run
// stubbed, recording the token the server would get) then the curl examples against a test
// server with that token. Every example must answer 200 (the empty query 400), the write
// included: a token given to the server only (TOOLRET_TOKEN=x go run ...) is not in the
// shell that sends the writes, which then get 401. It also runs the curl examples against a
// server without a token from a shell without one, and shows what a client without the
// token of a server that has one is told.
func TestDocsCurl(t *testing.T) {
	for _, c := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not found: the docs/serve.md examples need bash and curl", c)
		}
	}
	server, curls := docsBlocks(t)
	ncurl := strings.Count(curls, "\ncurl ") + 1
	type result struct {
		status int
		body   string
	}
	run := func(t *testing.T, script string, token func() string) []result {
		t.Helper()
		doc := t.TempDir()
		cmd := exec.Command("bash", "-c", docsPrelude+script)
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "TOOLRET_TOKEN=") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		cmd.Env = append(cmd.Env, "DOC="+doc)
		var out, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		tok := token()
		if tok == "" { // the server's token comes from the script's server block
			deadline := time.Now().Add(20 * time.Second)
			for {
				b, err := os.ReadFile(filepath.Join(doc, "token"))
				if err == nil {
					tok = strings.TrimSpace(string(b))
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("the docs' server block never started the server (stderr: %s)", stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
		} else if tok == "-" {
			tok = ""
		}
		srv, _, _ := newServer(t, Config{Token: tok})
		if err := os.WriteFile(filepath.Join(doc, "url"), []byte(strings.TrimPrefix(srv.URL, "http://")), 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			t.Fatal("the docs' examples did not finish in 2 minutes")
		}
		var res []result
		rest := out.String()
		for {
			body, after, ok := strings.Cut(rest, "\n@@status ")
			if !ok {
				break
			}
			var r result
			line, next, _ := strings.Cut(after, "\n")
			fmt.Sscan(line, &r.status)
			r.body, rest = body, next
			res = append(res, r)
		}
		if len(res) != ncurl {
			t.Fatalf("%d answers to %d curl examples; output:\n%s\nstderr:\n%s", len(res), ncurl, out.String(), stderr.String())
		}
		return res
	}
	check := func(t *testing.T, res []result, wantWrite int, wantMsg string) {
		t.Helper()
		for i, r := range res {
			want := 200
			switch {
			case strings.Contains(r.body, `"query\" is empty`):
				want = 400
			case wantWrite != 200 && strings.Contains(r.body, `no tool \"trains/book\"`): // it was never added
				want = 404
			case strings.Contains(r.body, "library_size") && (strings.Contains(r.body, `"added"`) || strings.Contains(r.body, `"deleted"`)),
				strings.Contains(r.body, "Authorization"):
				want = wantWrite
			}
			if r.status != want {
				t.Errorf("curl example %d: status %d, want %d: %s", i+1, r.status, want, r.body)
			}
			if want == 401 && !strings.Contains(r.body, wantMsg) {
				t.Errorf("curl example %d: %s, want it to say %q", i+1, r.body, wantMsg)
			}
		}
		writes := 0
		for _, r := range res {
			if strings.Contains(r.body, `"added":["trains/book"]`) || strings.Contains(r.body, `"deleted":["trains/book"]`) || r.status == 401 {
				writes++
			}
		}
		if writes != 2 {
			t.Errorf("%d write examples answered (add, delete), want 2", writes)
		}
	}
	t.Run("as-written", func(t *testing.T) {
		check(t, run(t, server+curls, func() string { return "" }), 200, "")
	})
	t.Run("no-token", func(t *testing.T) {
		check(t, run(t, curls, func() string { return "-" }), 200, "")
	})
	t.Run("token-not-exported", func(t *testing.T) {
		check(t, run(t, curls, func() string { return testToken }), 401, "is TOOLRET_TOKEN exported")
	})
}

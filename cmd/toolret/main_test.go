package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// capture runs f with os.Stderr redirected and returns what it wrote there.
func capture(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	f()
	w.Close()
	os.Stderr = old
	return string(<-done)
}

func TestRun(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"train", "biencoder", "-epoch", "3"}, 1, []string{"flag provided but not defined: -epoch (did you mean -epochs?)"}},
		{[]string{"train", "biencoder", "-h"}, 0, []string{"usage: toolret train biencoder [flags]", "docs/training-a-bi-encoder.md"}},
		{[]string{"eval", "-metod", "bm25"}, 2, []string{"did you mean -method?"}},
		{[]string{"export", "-fromat", "hf"}, 2, []string{"did you mean -format?"}},
		{[]string{"serve", "-h"}, 0, []string{"usage: toolret serve [flags]"}},
		{[]string{"bench", "colt", "-h"}, 0, []string{"usage: toolret bench colt [flags]"}},
		{[]string{"evl"}, 2, []string{`unknown command "evl" (did you mean "eval"?)`}},
		{[]string{"-h"}, 0, []string{"usage: toolret COMMAND", "train", "serve", "version"}},
		{nil, 2, []string{"usage: toolret COMMAND"}},
	} {
		var code int
		var buf bytes.Buffer
		out := capture(t, func() { code = run(c.args, &buf) })
		out += buf.String()
		if code != c.code {
			t.Errorf("toolret %s: exit %d, want %d (stderr %q)", strings.Join(c.args, " "), code, c.code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("toolret %s: stderr %q, want it to contain %q", strings.Join(c.args, " "), out, w)
			}
		}
		if strings.Count(out, "\n") > 20 {
			t.Errorf("toolret %s: %d lines on stderr, want a short message", strings.Join(c.args, " "), strings.Count(out, "\n"))
		}
	}
}

package cli

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

func TestRenamed(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		own  bool   // the command still defines -refiner itself
		want string // -first-stage, -rewriter or -refiner's value after parsing
		note string // the deprecation note, "" for none
		err  string
	}{
		{name: "new", args: []string{"-first-stage", "runs/be"}, want: "runs/be|llm|"},
		{name: "old", args: []string{"-retriever", "runs/be"}, want: "runs/be|llm|", note: "-retriever is deprecated, use -first-stage"},
		{name: "old=", args: []string{"--retriever=runs/be", "-rewriter", "prf"}, want: "runs/be|prf|", note: "-retriever is deprecated"},
		{name: "after bool", args: []string{"-quiet", "-refiner", "prf"}, want: "|prf|", note: "-refiner is deprecated, use -rewriter"},
		{name: "value named like a flag", args: []string{"-run", "-retriever"}, want: "|llm|"},
		{name: "after the flags", args: []string{"-quiet", "x", "-retriever", "y"}, want: "|llm|"},
		{name: "own flag", args: []string{"-refiner", "runs/ref"}, own: true, want: "||runs/ref"},
		{name: "bad value", args: []string{"-retriever"}, err: "flag needs an argument: -first-stage"},
	} {
		fs := flag.NewFlagSet("train feedback", flag.ContinueOnError)
		first := fs.String("first-stage", "", "")
		rw := fs.String("rewriter", "llm", "")
		ref := new(string)
		if c.own { // as export: -refiner is the ToolRefiner run, not the rewriter
			*rw = ""
			fs.StringVar(ref, "refiner", "", "")
		}
		fs.String("run", "", "")
		fs.Bool("quiet", false, "")
		var out bytes.Buffer
		Stderr = &out
		err := Parse(fs, c.args)
		Stderr = nil
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := *first + "|" + *rw + "|" + *ref; got != c.want {
			t.Errorf("%s: parsed %q, want %q", c.name, got, c.want)
		}
		if note := strings.TrimSpace(out.String()); c.note == "" && note != "" || !strings.Contains(note, c.note) || strings.Count(note, "\n") > 0 {
			t.Errorf("%s: stderr %q, want one line with %q", c.name, note, c.note)
		}
	}
}

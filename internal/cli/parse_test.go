package cli

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := flag.NewFlagSet("train biencoder", flag.ContinueOnError)
		fs.Int("epochs", 4, "epochs")
		fs.Int("eval-every", 0, "steps between evaluations")
		fs.Float64("lr", 5e-4, "learning rate")
		fs.String("run", "", "run directory")
		return fs
	}
	for _, c := range []struct {
		args    []string
		err     string // substring of the error; "" for none
		help    bool   // returns flag.ErrHelp
		printed []string
	}{
		{args: []string{"-epochs", "3"}},
		{args: []string{"-epoch", "3"}, err: "flag provided but not defined: -epoch (did you mean -epochs?)"},
		{args: []string{"-ru", "x"}, err: "did you mean -run?"},
		{args: []string{"-zzzzzz"}, err: "toolret train biencoder -h lists the flags"},
		{args: []string{"-epochs", "x"}, err: `invalid value "x" for flag -epochs`},
		{args: []string{"-h"}, help: true, printed: []string{"usage: toolret train biencoder [flags]", "-epochs -eval-every -lr -run", "docs/training-a-bi-encoder.md", "-help-flags"}},
		{args: []string{"-help-flags"}, help: true, printed: []string{"-eval-every int", "steps between evaluations"}},
	} {
		var out bytes.Buffer
		Stderr = &out
		err := Parse(newFS(), c.args)
		switch {
		case c.help:
			if !errors.Is(err, flag.ErrHelp) {
				t.Errorf("%q: error %v, want flag.ErrHelp", c.args, err)
			}
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want one containing %q", c.args, err, c.err)
		}
		for _, p := range c.printed {
			if !strings.Contains(out.String(), p) {
				t.Errorf("%q printed %q, want it to contain %q", c.args, out.String(), p)
			}
		}
		if !c.help && out.Len() > 0 {
			t.Errorf("%q printed %q: Parse must leave reporting errors to its caller", c.args, out.String())
		}
		if c.args[0] == "-h" && strings.Count(out.String(), "\n") > 8 {
			t.Errorf("-h printed %d lines, want a short synopsis", strings.Count(out.String(), "\n"))
		}
	}
	Stderr = nil
}

func TestClosest(t *testing.T) {
	names := []string{"epochs", "eval-every", "lr", "batch", "query-len", "tool-len"}
	for _, c := range []struct {
		name string
		want string
	}{
		{"epoch", "epochs"},
		{"bacth", "batch"},
		{"toollen", "tool-len"},
		{"query", "query-len"},
		{"xyz", ""},
	} {
		if got := strings.Join(Closest(c.name, names), ","); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

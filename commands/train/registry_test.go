package traincmd

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/toolret/toolret/internal/cli"
)

// Every train command is listed with a help line, the one its `-h` synopsis gives, and
// Main dispatches every registered kind's name.
func TestCommandsHelp(t *testing.T) {
	want := []string{"biencoder", "classifier", "colt", "crossencoder", "pretrain", "refiner", "mine", "feedback", "migrate", "plot"}
	var got []string
	for _, c := range Commands() {
		got = append(got, c.Name)
		var b bytes.Buffer
		cli.Synopsis(&b, flag.NewFlagSet("train "+c.Name, flag.ContinueOnError))
		if c.Help == "" || !strings.Contains(b.String(), "\n  "+c.Help+"\n") {
			t.Errorf("train %s: help %q, its -h synopsis:\n%s", c.Name, c.Help, b.String())
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Commands() = %v, want %v", got, want)
	}
	if s := Summary(); !strings.HasPrefix(s, "train a model: biencoder (default), classifier, ") {
		t.Errorf("Summary() = %q", s)
	}
	for _, tc := range []struct {
		cmd, wantErr string
	}{
		{"nope", `unknown command "nope" (biencoder, classifier, colt, crossencoder, pretrain, refiner, mine, feedback, migrate, plot)`},
		{"classifier", "flag provided but not defined: -nope"},
		{"plot", "flag provided but not defined: -nope"},
	} {
		if err := run(tc.cmd, []string{"-nope"}); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("train %s -nope: %v, want %q", tc.cmd, err, tc.wantErr)
		}
	}
}

package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

func newFS() (*flag.FlagSet, *float64, *uint64, *string) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	lr := fs.Float64("lr", 1e-3, "")
	seed := Seed(fs)
	Run(fs, "")
	Quiet(fs)
	Resume(fs)
	data := Data(fs)
	return fs, lr, seed, data
}

func TestParseCutoffsAndMetric(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"1,3,5", []int{1, 3, 5}, false},
		{" 10 , 2", []int{10, 2}, false},
		{"", DevKs, false},
		{"a,b", nil, true},
		{"0", nil, true},
		{"3,-1", nil, true},
	} {
		got, err := ParseCutoffs(tc.in)
		if (err != nil) != tc.err || (!tc.err && !slices.Equal(got, tc.want)) {
			t.Errorf("ParseCutoffs(%q) = %v, %v", tc.in, got, err)
		}
	}
	for _, m := range []string{"ndcg@5", "recall@1", "comp@10"} {
		if err := CheckMetric(m); err != nil {
			t.Errorf("CheckMetric(%q): %v", m, err)
		}
	}
	for _, m := range []string{"ndcg@20", "ndcg5", "NDCG@5", ""} {
		if err := CheckMetric(m); err == nil {
			t.Errorf("CheckMetric(%q) accepted", m)
		}
	}
	if err := Fraction("dev", 1); err == nil || !strings.Contains(err.Error(), "-dev 1") {
		t.Errorf("Fraction: %v", err)
	}
	if err := Positive("batch", 0); err == nil || !strings.Contains(err.Error(), "-batch 0") {
		t.Errorf("Positive: %v", err)
	}
}

func TestUnprefixed(t *testing.T) {
	base := errors.New("export: output x: y is not a directory")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{base, "output x: y is not a directory"},
		{fmt.Errorf("hub: %w", base), "hub: export: output x: y is not a directory"},
		{errors.New("export:no space"), "export:no space"},
	} {
		got := Unprefixed("export", tc.err)
		if got.Error() != tc.want || !errors.Is(got, tc.err) {
			t.Errorf("Unprefixed(%q) = %q (Is %v), want %q", tc.err, got, errors.Is(got, tc.err), tc.want)
		}
	}
	if Unprefixed("export", nil) != nil {
		t.Error("Unprefixed(nil) != nil")
	}
}

func TestLR(t *testing.T) {
	defer func(w io.Writer) { Stderr = w }(Stderr)
	for _, tc := range []struct {
		v         float64
		err, warn string // substrings; "" for none
	}{
		{5e-4, "", ""},
		{2e-5, "", ""},
		{1e-2, "", ""},
		{0, "-lr 0: must be > 0", ""},
		{-1e-3, "must be > 0", ""},
		{5e4, "", "warning: -lr 50000 is far above the usual learning rates (1e-3 to 1e-4 from scratch, 1e-5 to 5e-5 to fine-tune; above 0.01 training usually diverges); did you mean 5e-4?"},
		{0.05, "", "-lr 0.05 is far above"},
		{1e-9, "", "-lr 1e-09 is far below"},
	} {
		var b strings.Builder
		Stderr = &b
		err := LR(tc.v)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("LR(%g) = %v, want %q", tc.v, err, tc.err)
		}
		if (b.Len() == 0) != (tc.warn == "") || !strings.Contains(b.String(), tc.warn) {
			t.Errorf("LR(%g) warned %q, want %q", tc.v, b.String(), tc.warn)
		}
		if tc.v == 0.05 && strings.Contains(b.String(), "did you mean") {
			t.Errorf("LR(0.05): %q suggests an exponent", b.String())
		}
	}
}

package benchmark

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/toolret/toolret/models/biencoder"
)

// TestTrainStepFLOPs checks the formula on a case worked by hand: 1 layer, hidden 2,
// intermediate 4, batch 2, queries of 3 and tools of 5 tokens. Forward per sequence of S
// tokens: 2·S·(4·2·2 + 2·2·4) = 64·S for the projections and feed-forward, 4·S²·2 = 8·S²
// for attention; queries 2·(192+72) = 528, tools 2·(320+200) = 1040, scores 2·2·2·2 = 16;
// forward 1584, times 3 with the backward pass.
func TestTrainStepFLOPs(t *testing.T) {
	if got := TrainStepFLOPs(1, 2, 4, 2, 3, 5); got != 4752 {
		t.Errorf("TrainStepFLOPs = %v, want 4752", got)
	}
	if got := EncoderForwardFLOPs(2, 2, 4, 3, 5); got != 2*3*(64*5+8*25) {
		t.Errorf("EncoderForwardFLOPs = %v, want %v", got, 2*3*(64*5+8*25))
	}
}

func TestPadLen(t *testing.T) {
	for _, c := range []struct {
		p            biencoder.Padding
		n, max, want int
	}{{16, 17, 64, 32}, {16, 3, 64, 16}, {16, 50, 56, 56}, {biencoder.PadFixed, 3, 64, 64}, {8, 64, 64, 64}} {
		if got := PadLen(c.p, c.n, c.max); got != c.want {
			t.Errorf("PadLen(%v, %d, %d) = %d, want %d", c.p, c.n, c.max, got, c.want)
		}
	}
}

// TestLengthSamplers: the built-in quantiles stay in range and have about the right median;
// with a dataset the lengths are its texts'.
func TestLengthSamplers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	q, tl, src := ToolLensLengths("missing-dir", "missing.txt")
	if !strings.Contains(src, "built-in") {
		t.Errorf("source %q without a dataset", src)
	}
	below := 0
	for range 10000 {
		n, m := q(r), tl(r)
		if n < 8 || n > 144 || m < 54 || m > 1051 {
			t.Fatalf("lengths %d, %d outside the quantiles' range", n, m)
		}
		if n <= 31 {
			below++
		}
	}
	if below < 4700 || below > 5300 {
		t.Errorf("%d of 10000 query lengths <= the median 31", below)
	}
}

// TestPlanTrain: the plan is a function of the seed; its token counts are its batches';
// each input row's mask covers its real length.
func TestPlanTrain(t *testing.T) {
	q, tl, _ := ToolLensLengths("missing-dir", "missing.txt")
	s := TrainSpec{Layers: 1, Hidden: 4, Intermediate: 8, Vocab: 2000, Batch: 3, QueryLen: 32, ToolLen: 64, Steps: 4, Pad: 8, QueryLengths: q, ToolLengths: tl}
	a, b := PlanTrain(rand.New(rand.NewPCG(1, 2)), s), PlanTrain(rand.New(rand.NewPCG(1, 2)), s)
	if len(a.Batches) != 4 || a.RealTokens != b.RealTokens || a.FLOPs != b.FLOPs {
		t.Fatalf("plans of one seed differ, or %d batches", len(a.Batches))
	}
	real, pad, flops := 0, 0, 0.0
	for i, bt := range a.Batches {
		for _, n := range append(append([]int(nil), bt.Q...), bt.T...) {
			real += n
		}
		pad += s.Batch * (bt.QPad + bt.TPad)
		flops += TrainStepFLOPs(1, 4, 8, 3, bt.QPad, bt.TPad)
		if bt.QPad%8 != 0 && bt.QPad != 32 || bt.TPad > 64 {
			t.Errorf("batch %d padded to %d and %d", i, bt.QPad, bt.TPad)
		}
		mask := a.Inputs[i][1].Value().([][]int32)
		for r, n := range bt.Q {
			sum := 0
			for _, m := range mask[r] {
				sum += int(m)
			}
			if sum != n {
				t.Errorf("batch %d row %d: mask of %d tokens, length %d", i, r, sum, n)
			}
		}
	}
	if real != a.RealTokens || pad != a.PadTokens || flops != a.FLOPs {
		t.Errorf("tokens %d/%d, flops %v; plan says %d/%d, %v", real, pad, flops, a.RealTokens, a.PadTokens, a.FLOPs)
	}
}

func TestPeakRSS(t *testing.T) {
	if err := ResetPeakRSS(); err != nil {
		t.Skipf("cannot reset the peak RSS here: %v", err)
	}
	before, err := PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = byte(i)
	}
	after, err := PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 60<<20 {
		t.Errorf("peak RSS grew %d bytes after touching 64 MiB, want >= 60 MiB", after-before)
	}
	runtime.KeepAlive(b)
}

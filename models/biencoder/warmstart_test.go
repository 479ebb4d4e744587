package biencoder

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/toolret/toolret/models/encoder"
	"github.com/toolret/toolret/safetensors"
)

// TestExtendPositions writes a small BERT as an HF directory, extends its position table from
// 16 to 40 rows and checks the result: the config, every other tensor unchanged, the first 16
// rows kept, the new rows drawn with the given std (not copies of trained rows), and the
// directory loading back as an encoder with 40 positions. Refusals: not longer, no table.
func TestExtendPositions(t *testing.T) {
	dir := t.TempDir()
	enc, err := encoder.New("bert", encoder.Sizes{Vocab: 50, Layers: 1, Hidden: 32, Heads: 2, Intermediate: 64, MaxPositions: 16})
	if err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	if err := enc.Init(store.RootScope(), 5); err != nil {
		t.Fatal(err)
	}
	if err := enc.SaveHF(store.RootScope(), dir, false); err != nil {
		t.Fatal(err)
	}
	before, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ExtendPositions(dir, 40, 0.5, 9); err != nil {
		t.Fatal(err)
	}
	after, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range before.Names() {
		a, sa, _ := before.Float32(name)
		b, sb, err := after.Float32(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name != PositionTable {
			if !slices.Equal(a, b) || !slices.Equal(sa, sb) {
				t.Errorf("%s changed", name)
			}
			continue
		}
		if len(sb) != 2 || sb[0] != 40 || sb[1] != 32 {
			t.Fatalf("position table shape %v, want [40 32]", sb)
		}
		if !slices.Equal(a, b[:len(a)]) {
			t.Errorf("the first 16 rows changed")
		}
		sum, sq := 0.0, 0.0
		for _, v := range b[len(a):] {
			sum, sq = sum+float64(v), sq+float64(v)*float64(v)
		}
		n := float64(len(b) - len(a))
		if std := math.Sqrt(sq/n - (sum/n)*(sum/n)); math.Abs(std-0.5) > 0.05 {
			t.Errorf("new rows have std %.3f, want 0.5", std)
		}
		for r := 16; r < 40; r++ {
			if slices.Equal(b[r*32:(r+1)*32], b[(r%16)*32:(r%16+1)*32]) {
				t.Errorf("row %d copies row %d", r, r%16)
			}
		}
	}
	loaded, err := encoder.LoadHF(model.NewStore().RootScope(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.MaxPositions() != 40 || loaded.Hidden() != 32 {
		t.Errorf("loaded: %d positions, hidden %d", loaded.MaxPositions(), loaded.Hidden())
	}
	if err := ExtendPositions(dir, 40, 0.5, 9); err == nil || !strings.Contains(err.Error(), "not more") {
		t.Errorf("extending 40 to 40: %v", err)
	}
	if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), []safetensors.Tensor{{Name: "x", Shape: []int{1}, Data: []float32{1}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := ExtendPositions(dir, 80, 0.5, 9); err == nil || !strings.Contains(err.Error(), "no tensor "+PositionTable) {
		t.Errorf("no position table: %v", err)
	}
}

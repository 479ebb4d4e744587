package train

import (
	"reflect"
	"slices"
	"testing"
)

func TestEpochOrder(t *testing.T) {
	items := []int{10, 11, 12, 13, 14, 15, 16}
	a := &EpochOrder{Items: items, Seed: 3, Salt: 1}
	b := &EpochOrder{Items: items, Seed: 3, Salt: 1}
	e0 := slices.Clone(a.Of(0))
	if !reflect.DeepEqual(slices.Sorted(slices.Values(e0)), items) {
		t.Fatalf("epoch 0 %v is not a permutation of %v", e0, items)
	}
	// Asking another epoch first does not change epoch 0's order.
	b.Of(5)
	if !reflect.DeepEqual(b.Of(0), e0) {
		t.Errorf("epoch 0: %v after epoch 5, %v fresh", b.Of(0), e0)
	}
	if reflect.DeepEqual(a.Of(1), e0) {
		t.Errorf("epochs 0 and 1 share an order %v", e0)
	}
	if c := (&EpochOrder{Items: items, Seed: 3, Salt: 2}); reflect.DeepEqual(c.Of(0), e0) {
		t.Errorf("another salt gave the same order %v", e0)
	}
	var got []int
	for i := 0; ; i++ {
		bt, err := a.Batch(0, i, 3)
		if err != nil {
			if i != 3 {
				t.Errorf("batch %d: %v", i, err)
			}
			break
		}
		got = append(got, bt...)
	}
	if !reflect.DeepEqual(got, e0) {
		t.Errorf("batches %v, order %v", got, e0)
	}
	if _, err := a.Batch(0, 0, 0); err == nil {
		t.Error("batch size 0 accepted")
	}
}

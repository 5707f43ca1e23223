package ring

import "testing"

// TestFIFOAcrossGrowth pushes and pops in a pattern that wraps the buffer
// before each growth, checking FIFO order, At and Len against a slice.
func TestFIFOAcrossGrowth(t *testing.T) {
	var r Ring[int]
	r.MinCap = 4
	var model []int
	next := 0
	for round := 0; round < 200; round++ {
		for k := 0; k < round%7+1; k++ {
			r.Push(next)
			model = append(model, next)
			next++
		}
		for k := 0; k < round%5 && len(model) > 0; k++ {
			if got := r.Pop(); got != model[0] {
				t.Fatalf("round %d: Pop = %d, want %d", round, got, model[0])
			}
			model = model[1:]
		}
		if r.Len() != len(model) {
			t.Fatalf("round %d: Len = %d, want %d", round, r.Len(), len(model))
		}
		for i, v := range model {
			if *r.At(i) != v {
				t.Fatalf("round %d: At(%d) = %d, want %d", round, i, *r.At(i), v)
			}
		}
	}
	if c := r.Cap(); c&(c-1) != 0 || c < r.Len() {
		t.Fatalf("Cap %d: want a power of two holding %d", c, r.Len())
	}
}

func TestPopZeroesAndClear(t *testing.T) {
	var r Ring[*int]
	x, y := 1, 2
	r.Push(&x)
	r.Push(&y)
	r.Pop()
	if r.buf[0] != nil {
		t.Fatal("Pop left a reference in its slot")
	}
	r.Clear()
	for i, p := range r.buf {
		if p != nil {
			t.Fatalf("Clear left a reference in slot %d", i)
		}
	}
	if r.Len() != 0 {
		t.Fatalf("Len after Clear = %d", r.Len())
	}
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	var r Ring[[2]int]
	for i := 0; i < 100; i++ {
		r.Push([2]int{i})
	}
	allocs := testing.AllocsPerRun(1000, func() {
		r.Push([2]int{1})
		r.Pop()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per push and pop", allocs)
	}
}

func TestOutOfRangePanics(t *testing.T) {
	var r Ring[int]
	for _, f := range []func(){func() { r.Pop() }, func() { r.At(0) }, func() { r.Push(1); r.At(1) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		}()
	}
}

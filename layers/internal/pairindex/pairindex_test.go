package pairindex

import (
	"math/rand/v2"
	"testing"

	"github.com/layercast/layercast/event"
)

// The table agrees with a map over random pair sets, across Resets that
// reuse and that replace its slots; Prefetch before each lookup changes
// nothing.
func TestTableAgreesWithMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tb Table[int]
	for round := 0; round < 50; round++ {
		n := rng.IntN(300)
		want := map[[2]uint32]int{}
		tb.Reset(n)
		for len(want) < n {
			k := [2]uint32{rng.Uint32N(20) + 1, rng.Uint32N(40) + 1}
			if _, ok := want[k]; ok {
				continue
			}
			want[k] = len(want)
			tb.Put(event.GroupID(k[0]), event.NodeID(k[1]), want[k])
		}
		for g := uint32(1); g <= 20; g++ {
			for p := uint32(1); p <= 40; p++ {
				v, ok := want[[2]uint32{g, p}]
				tb.Prefetch(event.GroupID(g), event.NodeID(p))
				got := tb.Get(event.GroupID(g), event.NodeID(p))
				switch {
				case ok && (got == nil || *got != v):
					t.Fatalf("round %d: Get(%d, %d) = %v, want %d", round, g, p, got, v)
				case !ok && got != nil:
					t.Fatalf("round %d: Get(%d, %d) = %d, want nil", round, g, p, *got)
				}
			}
		}
	}
	var empty Table[int]
	empty.Prefetch(1, 1)
	if empty.Get(1, 1) != nil {
		t.Fatal("the zero Table holds a pair")
	}
}

// stages records the stages Warm hands it.
type stages struct{ got *[]int }

func (s stages) Warm(stage int) { *s.got = append(*s.got, stage) }

// Warm asks only for the slot at stage 0, hands a held pair's value each
// later stage less one, and warms nothing for a pair the table lacks.
func TestWarmStages(t *testing.T) {
	var got []int
	var tb Table[stages]
	tb.Reset(1)
	tb.Put(3, 4, stages{&got})
	for stage := 0; stage < 4; stage++ {
		Warm(&tb, 3, 4, stage)
		Warm(&tb, 3, 5, stage)
	}
	if len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 2 {
		t.Errorf("Warm stages 0..3 handed the value %v, want [0 1 2]", got)
	}
}

package seqwin

import (
	"math/rand/v2"
	"testing"
)

// TestBitmapAgainstMap drives a Bitmap over a sliding range [next,
// next+size) as reliable does and checks Has and NextUnset against a map.
func TestBitmapAgainstMap(t *testing.T) {
	var zero Bitmap
	zero.Prefetch(7) // the zero Bitmap has no words: nothing to load
	rng := rand.New(rand.NewPCG(1, 2))
	b := NewBitmap(200) // rounds to 256
	if b.Size() != 256 {
		t.Fatalf("Size %d, want 256", b.Size())
	}
	got := map[uint32]bool{}
	next := uint32(1 << 20)
	for step := 0; step < 20000; step++ {
		seq := next + uint32(rng.IntN(b.Size()))
		b.Prefetch(seq) // a hint: changes nothing
		b.Set(seq)
		got[seq] = true
		for b.Has(next) {
			b.Clear(next)
			delete(got, next)
			next++
		}
		lo := next + uint32(rng.IntN(b.Size()))
		hi := next + uint32(b.Size())
		want := lo
		for want < hi && got[want] {
			want++
		}
		if u := b.NextUnset(lo, hi); u != want {
			t.Fatalf("step %d: NextUnset(%d, %d) = %d, want %d", step, lo, hi, u, want)
		}
		for s := next; s < next+uint32(b.Size()); s += 17 {
			if b.Has(s) != got[s] {
				t.Fatalf("step %d: Has(%d) = %v", step, s, b.Has(s))
			}
		}
	}
}

func TestNextUnsetStopsAtLimit(t *testing.T) {
	b := NewBitmap(64)
	for s := uint32(0); s < 64; s++ {
		b.Set(s)
	}
	if u := b.NextUnset(3, 40); u != 40 {
		t.Fatalf("NextUnset over a full range = %d, want the limit 40", u)
	}
	b.Clear(10)
	if u := b.NextUnset(3, 9); u != 9 {
		t.Fatalf("NextUnset(3, 9) = %d, want 9 (10 is past the limit)", u)
	}
}

// TestWindowSlides checks the sliding window against a model that keeps
// everything and forgets below a base moved as the window says.
func TestWindowSlides(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	w := NewWindow(1000, 128)
	got := map[uint32]bool{}
	top := uint32(1000)
	for step := 0; step < 20000; step++ {
		seq := top - 100 + uint32(rng.IntN(140))
		old := w.Base()
		w.Mark(seq)
		got[seq] = true
		top = max(top, seq)
		if b := w.Base(); b != old && ((b-old)%64 != 0 || seq-b >= 128 || seq-(b-64) < 128) {
			t.Fatalf("step %d: marking %d moved base %d -> %d", step, seq, old, b)
		}
		for s := top - 300; s < top+200; s++ {
			want := s < w.Base() || got[s] && s < w.Base()+128
			if w.Has(s) != want {
				t.Fatalf("step %d: Has(%d) = %v, want %v (base %d)", step, s, w.Has(s), want, w.Base())
			}
		}
	}
	far := top + 1<<20 // far ahead: every old mark cleared
	w.Mark(far)
	for s := w.Base(); s < w.Base()+128; s++ {
		if w.Has(s) != (s == far) {
			t.Fatalf("after a jump to %d: Has(%d) = %v", far, s, w.Has(s))
		}
	}
}

func TestNoAllocs(t *testing.T) {
	w := NewWindow(0, 2048)
	b := NewBitmap(1024)
	seq := uint32(0)
	if a := testing.AllocsPerRun(1000, func() { w.Mark(seq); b.Set(seq); b.Clear(seq); seq += 7 }); a != 0 {
		t.Fatalf("%v allocations", a)
	}
}

// TestSlotsAgainstMap drives a reorder buffer as fifo does (deliver the
// next number, hold what comes early, give up a gap by skipping to the
// first held) and checks every read against a map.
func TestSlotsAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := Slots[int]{Max: 100}
	held := map[int]int{} // offset from next -> value
	for step := 1; step < 20000; step++ {
		off := rng.IntN(120)
		ok := s.Put(off, step)
		_, taken := held[off]
		if want := off < 100 && !taken; ok != want {
			t.Fatalf("step %d: Put(%d) = %v, want %v", step, off, ok, want)
		}
		if ok {
			held[off] = step
		}
		switch rng.IntN(3) {
		case 0: // advance one
			v := s.Advance()
			if v != held[0] {
				t.Fatalf("step %d: Advance = %d, want %d", step, v, held[0])
			}
			held = shift(held, 1)
		case 1: // skip to the first held
			k := s.FirstHeld()
			want := -1
			for o := range held {
				if want < 0 || o < want {
					want = o
				}
			}
			if k != want {
				t.Fatalf("step %d: FirstHeld = %d, want %d", step, k, want)
			}
			if k > 0 {
				s.Skip(k)
				held = shift(held, k)
			}
		}
		if s.Len() != len(held) {
			t.Fatalf("step %d: Len %d, want %d", step, s.Len(), len(held))
		}
		for o := 0; o < 110; o++ {
			if s.Get(o) != held[o] {
				t.Fatalf("step %d: Get(%d) = %d, want %d", step, o, s.Get(o), held[o])
			}
		}
	}
	var got []int
	s.Clear(func(v int) { got = append(got, v) })
	if len(got) != len(held) || s.Len() != 0 || s.FirstHeld() != -1 {
		t.Fatalf("Clear handed %d of %d, left %d", len(got), len(held), s.Len())
	}
}

func shift(m map[int]int, k int) map[int]int {
	out := map[int]int{}
	for o, v := range m {
		if o >= k {
			out[o-k] = v
		}
	}
	return out
}

func TestPowerOfTwo(t *testing.T) {
	for _, c := range []struct{ n, least, want int }{
		{0, 64, 64}, {64, 64, 64}, {65, 64, 128}, {4096, 64, 4096}, {4097, 64, 8192}, {1, 16, 16}, {17, 16, 32}, {256, 16, 256},
	} {
		if got := PowerOfTwo(c.n, c.least); got != c.want {
			t.Errorf("PowerOfTwo(%d, %d) = %d, want %d", c.n, c.least, got, c.want)
		}
	}
}

// TestBitmapGrowKeepsMarks drives a bitmap that starts at 64 numbers and
// grows on demand beside one made at full size, as reliable drives its
// receive window ([next, highest] marked at random, next sliding): after
// every step both say the same for every number of the window, and a Grow
// to a size already covered changes nothing.
func TestBitmapGrowKeepsMarks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const full = 4096
	small, big := NewBitmap(64), NewBitmap(full)
	next := uint32(1 << 20)
	highest := next - 1
	grew := 0
	for step := 0; step < 20000; step++ {
		// raise highest by a little, sometimes by a lot (a digest)
		span := 1 + rng.IntN(4)
		if rng.IntN(200) == 0 {
			span = rng.IntN(full / 2)
		}
		if h := highest + uint32(span); h-next < full {
			highest = h
		}
		if need := int(highest-next) + 1; need > small.Size() {
			small.Grow(need, next)
			grew++
		}
		if small.Size() < int(highest-next)+1 {
			t.Fatalf("step %d: size %d does not cover %d numbers", step, small.Size(), highest-next+1)
		}
		seq := next + uint32(rng.IntN(int(highest-next)+1))
		small.Set(seq)
		big.Set(seq)
		for next <= highest && big.Has(next) {
			if !small.Has(next) {
				t.Fatalf("step %d: %d marked in the full bitmap only", step, next)
			}
			big.Clear(next)
			small.Clear(next)
			next++
		}
		before := small.Size()
		small.Grow(before/2, next)
		if small.Size() != before {
			t.Fatalf("Grow to a smaller size changed the size %d to %d", before, small.Size())
		}
		for off := uint32(0); off < uint32(small.Size()); off++ {
			if small.Has(next+off) != big.Has(next+off) {
				t.Fatalf("step %d: number %d: grown %v, full %v", step, next+off, small.Has(next+off), big.Has(next+off))
			}
		}
	}
	if grew < 3 || small.Size() < full/2 {
		t.Fatalf("grew %d times to %d: the test did not exercise growth", grew, small.Size())
	}
}

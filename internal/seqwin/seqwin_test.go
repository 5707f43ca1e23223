package seqwin

import (
	"math/rand/v2"
	"testing"
)

// TestBitmapAgainstMap drives a Bitmap over a sliding range [next,
// next+size) as reliable does and checks Has and NextUnset against a map.
func TestBitmapAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := NewBitmap(200) // rounds to 256
	if b.Size() != 256 {
		t.Fatalf("Size %d, want 256", b.Size())
	}
	got := map[uint32]bool{}
	next := uint32(1 << 20)
	for step := 0; step < 20000; step++ {
		seq := next + uint32(rng.IntN(b.Size()))
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

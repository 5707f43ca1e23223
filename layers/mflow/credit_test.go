package mflow

import (
	"math/rand/v2"
	"testing"
)

// naiveCredits applies every acknowledgement at once and finds the least
// credited receiver by scanning: the O(n) reference for credits.
type naiveCredits struct{ limit []int64 }

func (n *naiveCredits) min() int64 {
	lo := n.limit[0]
	for _, l := range n.limit[1:] {
		lo = min(lo, l)
	}
	return lo
}

// TestCreditsMatchNaive drives one sender and m receivers through random
// message sizes and random delivery orders of data (FIFO per receiver) and
// acknowledgements (FIFO per receiver, any interleaving between receivers),
// and checks at every step that the O(1) rotation gives the same least
// credit as the O(n) scan, and that no receiver ever holds more than its
// window of unprocessed bytes (window+offset before its first ack).
func TestCreditsMatchNaive(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		m := 1 + rng.IntN(40)
		thresh := int64(500 + rng.IntN(30000))
		window := thresh + int64(rng.IntN(60000)) + 3000
		stagger := rng.IntN(4) != 0
		maxSize := 1 + rng.IntN(3000)

		offs := make([]int64, m)
		limits := make([]int64, m)
		rcv := make([]receiver, m)
		for i := range offs {
			if stagger {
				offs[i] = int64(i) * thresh / int64(m)
			}
			limits[i] = window + offs[i]
			rcv[i] = receiver{off: offs[i], c: -offs[i], due: thresh}
		}
		var fast credits
		fast.reset(limits)
		if !fast.fast {
			t.Fatalf("seed %d: fresh staggered credits not in fast mode", seed)
		}
		naive := naiveCredits{limit: append([]int64(nil), limits...)}

		inflight := make([][]int64, m) // data not yet processed, per receiver
		acks := make([][]int64, m)     // acks not yet applied, per receiver
		processed := make([]int64, m)
		acked := make([]bool, m)
		sent := int64(0)
		for step := 0; step < 4000; step++ {
			lo, _ := fast.min()
			if lo != naive.min() {
				t.Fatalf("seed %d step %d: fast min = %d, naive min = %d (m=%d thresh=%d window=%d)", seed, step, lo, naive.min(), m, thresh, window)
			}
			switch rng.IntN(3) {
			case 0: // the sender sends if it may
				cost := int64(1+rng.IntN(maxSize)) + 100
				credit := lo - sent
				big := window - thresh
				if credit >= cost || (cost > big && credit >= big) {
					sent += cost
					fast.sent = sent
					for i := range inflight {
						inflight[i] = append(inflight[i], cost)
					}
				}
			case 1: // a receiver processes a message
				i := rng.IntN(m)
				if len(inflight[i]) == 0 {
					continue
				}
				cost := inflight[i][0]
				inflight[i] = inflight[i][1:]
				processed[i] += cost
				if a, ok := rcv[i].count(cost, thresh); ok {
					acks[i] = append(acks[i], a)
				}
			case 2: // an acknowledgement arrives
				i := rng.IntN(m)
				if len(acks[i]) == 0 {
					continue
				}
				a := acks[i][0]
				acks[i] = acks[i][1:]
				acked[i] = true
				fast.ack(i, a)
				naive.limit[i] += a
			}
			for i := range processed {
				limit := window
				if !acked[i] {
					limit += offs[i]
				}
				if held := sent - processed[i]; held > limit && !(maxSize+100 > int(window-thresh)) {
					t.Fatalf("seed %d step %d: receiver %d holds %d bytes, window %d", seed, step, i, held, limit)
				}
			}
		}
		// Messages larger than ack_thresh make a receiver skip a turn (one
		// acknowledgement covers two of its lattice points); the scan then
		// takes over, exactly. Otherwise the rotation must hold throughout.
		if !fast.fast && int64(maxSize)+100 <= thresh {
			t.Errorf("seed %d: left fast mode with lattice-following receivers", seed)
		}
	}
}

// TestCreditsFallBackAndRecover feeds acknowledgements that break the
// rotation (amounts off the lattice) and checks the structure falls back to
// the scan, stays exact, and returns to O(1) once the order holds.
func TestCreditsFallBackAndRecover(t *testing.T) {
	var c credits
	c.reset([]int64{100, 110, 120})
	if !c.fast || c.p != 0 {
		t.Fatalf("reset: fast=%v p=%d, want fast at 0", c.fast, c.p)
	}
	c.ack(2, 5)  // queued: not its turn
	c.ack(0, 15) // 115 < 120 (receiver 2's applied limit): out of order
	if c.fast {
		t.Fatalf("ack off the lattice kept fast mode")
	}
	if lo, slot := c.min(); lo != 110 || slot != 1 {
		t.Fatalf("min() = %d at %d, want 110 at 1", lo, slot)
	}
	if c.limit[2] != 125 {
		t.Fatalf("queued ack not applied on fallback: limit[2] = %d, want 125", c.limit[2])
	}
	c.ack(1, 5) // 115,115,125: sorted from 0
	if !c.fast {
		t.Fatalf("sorted limits did not return to fast mode: %v", c.limit)
	}
	if lo, _ := c.min(); lo != 115 {
		t.Fatalf("min() = %d, want 115", lo)
	}
}

func TestReceiverCountStaysOnLattice(t *testing.T) {
	r := receiver{off: 300, c: -300, due: 1000}
	var pos, last int64
	var got []int64
	for i := 0; i < 100; i++ {
		pos += 170
		if a, ok := r.count(170, 1000); ok {
			if pos-last != a+func() int64 {
				if last == 0 {
					return 300
				}
				return 0
			}() {
				t.Fatalf("ack at %d returns %d, last ack at %d", pos, a, last)
			}
			got = append(got, pos)
			last = pos
		}
	}
	// Acks at the first message end at or past 1300, 2300, 3300, ...
	for k, p := range got {
		lat := int64(300 + 1000*(k+1))
		if p < lat || p >= lat+170 {
			t.Fatalf("ack %d at %d, want in [%d, %d)", k, p, lat, lat+170)
		}
	}
}

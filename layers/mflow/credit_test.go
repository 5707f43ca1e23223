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
// credit as the O(n) scan, and that no receiver ever holds more than
// window + headroom - offset unprocessed bytes (window + headroom before its
// first ack; the headroom is ack_thresh for a staggered receiver, 0 for the
// one at offset 0).
func TestCreditsMatchNaive(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		m := 1 + rng.IntN(40)
		thresh := int64(500 + rng.IntN(30000))
		window := thresh + int64(rng.IntN(60000)) + 3000
		stagger := rng.IntN(4) != 0
		maxSize := 1 + rng.IntN(3000)

		offs := make([]int64, m)
		heads := make([]int64, m)
		limits := make([]int64, m)
		rcv := make([]receiver, m)
		for i := range offs {
			if stagger {
				offs[i] = int64(i) * thresh / int64(m)
			}
			if offs[i] > 0 {
				heads[i] = thresh
			}
			limits[i] = window + heads[i]
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
				limit := window + heads[i]
				if acked[i] {
					limit -= offs[i]
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

// TestReceiverCountStaysOnLattice: a receiver with offset off and
// ack_thresh 1000 acknowledges at the first message at or past off+1000,
// off+2000, ... of the stream; at offset 300 it returns whole thresholds
// (more than one when a message crosses two points) and carries the rest,
// at offset 0 everything; what it has returned plus what it holds is
// always what it took in.
func TestReceiverCountStaysOnLattice(t *testing.T) {
	for _, tc := range []struct{ off, cost int64 }{{300, 170}, {300, 999}, {300, 2500}, {0, 170}, {0, 2500}} {
		off, cost := tc.off, tc.cost
		r := receiver{off: off, c: -off, due: 1000}
		var pos, returned int64
		var got []int64
		for i := 0; i < 200; i++ {
			pos += cost
			a, ok := r.count(cost, 1000)
			if ok {
				if a <= 0 || (off > 0 && a%1000 != 0) || (off == 0 && r.c != 0) {
					t.Fatalf("offset %d cost %d: ack at %d returns %d, keeps %d", off, cost, pos, a, r.c)
				}
				returned += a
				got = append(got, pos)
			}
			if returned+r.c+r.off != pos || r.c < -r.off || r.c >= 1000 {
				t.Fatalf("offset %d cost %d at %d: returned %d + count %d + offset != taken in (count out of range?)", off, cost, pos, returned, r.c)
			}
		}
		// Each ack is at the first message end at or past a lattice point,
		// and no lattice point is passed without one.
		k := int64(1)
		for _, p := range got {
			lat := off + 1000*k
			if p < lat || p >= lat+cost {
				t.Fatalf("offset %d cost %d: ack at %d, want in [%d, %d)", off, cost, p, lat, lat+cost)
			}
			for off+1000*k <= p {
				k++
			}
		}
	}
}

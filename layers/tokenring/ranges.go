package tokenring

// Range lists are NAK sets as the token carries them: ascending, disjoint
// (from, to) pairs, inclusive. A list made for a partition names only the
// sequence numbers that partition caches (step apart), so a run of missing
// cached packets x, x+p, x+2p is one range. A list is bounded: a builder
// stops at max ranges and says up to where the list is complete (its
// limit), so a node never reports a missing packet beyond it as present.

// rangeBuilder appends sequence numbers, in ascending order, to a range
// list of at most max ranges.
type rangeBuilder struct {
	r    []uint32
	step uint32
	max  int
	// limit is how far the list is complete: hi unless it overflowed, then
	// one below the first number it could not take.
	limit uint32
	full  bool
}

func newBuilder(buf []uint32, step uint32, max int, hi uint32) rangeBuilder {
	return rangeBuilder{r: buf[:0], step: max1(step), max: max, limit: hi}
}

func max1(x uint32) uint32 {
	if x == 0 {
		return 1
	}
	return x
}

// add appends x (greater than every number added before).
func (b *rangeBuilder) add(x uint32) {
	if b.full {
		return
	}
	if n := len(b.r); n > 0 && x <= b.r[n-1]+b.step {
		b.r[n-1] = x
		return
	}
	if len(b.r) >= 2*b.max {
		b.full = true
		b.limit = x - 1
		return
	}
	b.r = append(b.r, x, x)
}

// inRanges reports whether x is in one of r's ranges.
func inRanges(r []uint32, x uint32) bool {
	lo, hi := 0, len(r)/2
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case x < r[2*m]:
			hi = m
		case x > r[2*m+1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

// intersect returns the numbers in both a (complete up to la) and b
// (complete up to lb), complete up to min(la, lb), appended to out[:0].
func intersect(out, a []uint32, la uint32, b []uint32, lb uint32) ([]uint32, uint32) {
	lim := min(la, lb)
	out = out[:0]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		lo, hi := max(a[i], b[j]), min(a[i+1], b[j+1])
		if hi > lim {
			hi = lim
		}
		if lo <= hi {
			out = append(out, lo, hi)
		}
		if a[i+1] < b[j+1] {
			i += 2
		} else {
			j += 2
		}
	}
	return out, lim
}

// eachIn calls f with every number of r's ranges that is part modulo step,
// up to limit, ascending, until f returns false.
func eachIn(r []uint32, step, part, limit uint32, f func(uint32) bool) {
	step = max1(step)
	for i := 0; i < len(r); i += 2 {
		x := firstFrom(r[i], step, part)
		for ; x <= r[i+1] && x <= limit && x != 0; x += step {
			if !f(x) {
				return
			}
		}
	}
}

// firstFrom is the first number at or after lo that is part modulo step.
func firstFrom(lo, step, part uint32) uint32 {
	if step <= 1 {
		return lo
	}
	return lo + (part+step-lo%step)%step
}

// countIn is how many numbers of r's ranges are part modulo step.
func countIn(r []uint32, step, part uint32) int {
	n := 0
	step = max1(step)
	for i := 0; i < len(r); i += 2 {
		x := firstFrom(r[i], step, part)
		if x <= r[i+1] {
			n += int((r[i+1]-x)/step) + 1
		}
	}
	return n
}

// union returns the numbers in a (complete up to la) or in b (complete up
// to lb), complete up to min(la, lb), in at most max ranges (fewer numbers,
// and a lower limit, when it would need more), appended to out[:0].
// Ranges step apart or closer merge.
func union(out, a []uint32, la uint32, b []uint32, lb uint32, step uint32, max int) ([]uint32, uint32) {
	step = max1(step)
	lim := min(la, lb)
	out = out[:0]
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var lo, hi uint32
		if j >= len(b) || (i < len(a) && a[i] <= b[j]) {
			lo, hi = a[i], a[i+1]
			i += 2
		} else {
			lo, hi = b[j], b[j+1]
			j += 2
		}
		if lo > lim {
			break
		}
		hi = min(hi, lim)
		if n := len(out); n > 0 && lo <= out[n-1]+step {
			out[n-1] = maxU(out[n-1], hi)
			continue
		}
		if len(out) >= 2*max {
			return out, lo - 1
		}
		out = append(out, lo, hi)
	}
	return out, lim
}

func maxU(a, b uint32) uint32 {
	if a > b {
		return a
	}
	return b
}

package experiment

import (
	"math/bits"
	"time"
)

// hist is a log-linear histogram of non-negative durations: exact below
// 128ns, then 64 sub-buckets per power of two (under 1.6% error), so that
// percentiles of millions of samples cost a few kilobytes. The mean and the
// maximum are exact.
type hist struct {
	counts []int64
	n      int64
	sum    float64
	max    int64
}

const histSub = 64

func histIndex(v int64) int {
	if v < 2*histSub {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - 7 // v>>e in [64, 128)
	return 2*histSub + (e-1)*histSub + int(v>>e) - histSub
}

// histValue is the middle of bucket i.
func histValue(i int) int64 {
	if i < 2*histSub {
		return int64(i)
	}
	j := i - 2*histSub
	e := j/histSub + 1
	m := int64(j%histSub + histSub)
	return m<<e + (1<<e)/2
}

func (h *hist) add(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	i := histIndex(v)
	if i >= len(h.counts) {
		h.counts = append(h.counts, make([]int64, i+1-len(h.counts))...)
	}
	h.counts[i]++
	h.n++
	h.sum += float64(v)
	h.max = max(h.max, v)
}

// quantile returns the q-quantile (0 < q <= 1) in nanoseconds.
func (h *hist) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(q*float64(h.n) + 0.5)
	rank = max(1, min(rank, h.n))
	var c int64
	for i, k := range h.counts {
		c += k
		if c >= rank {
			return min(histValue(i), h.max)
		}
	}
	return h.max
}

func (h *hist) mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

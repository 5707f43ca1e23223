package gms

import (
	"math"
	"time"
)

// The accrual failure detector (Hayashibara, Défago, Yared and Katayama,
// "The φ accrual failure detector", SRDS 2004; as in Akka's
// PhiAccrualFailureDetector and Cassandra's FailureDetector): the service
// learns the distribution of a node's heartbeat inter-arrival times, and
// the suspicion level after a silence of t is
//
//	φ(t) = -log10(P(next heartbeat later than t))
//
// under a normal distribution of the learnt mean and deviation. The node
// is suspected once φ reaches its threshold, which is the silence
// mean + z(threshold) x deviation; the static fd_timeout is the floor (a
// node is never suspected sooner than today) and fd_max the ceiling (a
// crashed node is still removed within fd_max + suspect_timeout +
// view_interval, however jittery it was).

// arrivals is the mean and variance of a node's heartbeat inter-arrival
// times over about its last 1/arrivalWeight samples, in constant space
// (the service may watch 65536 nodes): the plain mean and variance of the
// first samples (weight 1/n, so that the first ones do not start the
// variance at 0), then exponentially weighted.
type arrivals struct {
	n        int     // samples taken (saturates at 1/arrivalWeight)
	mean, vr float64 // nanoseconds, nanoseconds squared
}

const (
	// arrivalWeight is the weight of a new sample once 1/arrivalWeight
	// have been taken.
	arrivalWeight = 1.0 / 32
	// minSamples is how many samples the detector needs before it
	// adapts: until then the static fd_timeout alone applies.
	minSamples = 8
)

// add takes one inter-arrival sample (capped: one long freeze must not
// teach the detector to wait forever).
func (a *arrivals) add(d, ceiling time.Duration) {
	x := float64(min(d, ceiling))
	if a.n < int(1/arrivalWeight) {
		a.n++
	}
	w := max(arrivalWeight, 1/float64(a.n))
	diff := x - a.mean
	a.mean += w * diff
	a.vr = (1 - w) * (a.vr + w*diff*diff)
}

// sd is the deviation the detector uses: at least a tenth of the mean, so
// that a perfectly regular node does not make every late packet look
// impossible (Akka's min-std-deviation).
func (a *arrivals) sd() float64 { return max(math.Sqrt(a.vr), a.mean/10) }

// phiZ is the number of deviations past the mean at which φ reaches
// threshold: the normal quantile of 1 - 10^-threshold.
func phiZ(threshold float64) float64 {
	return math.Sqrt2 * math.Erfcinv(2*math.Pow(10, -threshold))
}

// phiWindow is the silence after which a node is suspected: the silence at
// which φ reaches threshold, within [floor, ceiling]. threshold 0, or too
// few samples, gives floor: the static detector.
func phiWindow(a *arrivals, threshold float64, floor, ceiling time.Duration) time.Duration {
	if threshold <= 0 || a.n < minSamples || ceiling <= floor {
		return floor
	}
	t := a.mean + phiZ(threshold)*a.sd()
	if t >= float64(ceiling) {
		return ceiling
	}
	return max(floor, time.Duration(t))
}

// phiOf is φ after a silence of d: -log10 of the normal tail beyond d. It
// stays finite for long silences (the tail's logarithm by its asymptote
// where erfc underflows), so a report can print it.
func phiOf(a *arrivals, d time.Duration) float64 {
	if a.n == 0 {
		return 0
	}
	x := (float64(d) - a.mean) / (a.sd() * math.Sqrt2)
	if x < 20 {
		return -math.Log10(math.Erfc(x) / 2)
	}
	// erfc(x) ~ exp(-x²) / (x √π) for large x.
	return (x*x)/math.Ln10 + math.Log10(2*x*math.Sqrt(math.Pi))
}

// DefaultPhi is the accrual threshold a node declares unless its spec says
// otherwise: Akka's and Cassandra's default (a live node's heartbeat that
// late has a chance of 10^-8 under the learnt distribution).
const DefaultPhi = 8

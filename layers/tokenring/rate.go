package tokenring

import (
	"math"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// rateCtl is section 2.4's rate control at one node.
//
// As a receiver it keeps mu_rec(i): the rate at which new packets reach the
// node, a moving average of rate_samples samples taken every rate_sample.
// The token carries the region's minimum; the region leader divides it by
// the number of active senders (equation 1) and puts it on the ACK.
//
// As a sender it sends at mu_snd = max(rate_min, (1+lambda) mu_rec)
// (equation 2), mu_rec being the lowest fair share among its regions'
// ACKs. A credit pool of size credits is spent one credit per regional
// packet; below half of it a timer is set for tau = min(credits - c,
// credits/2) / mu_snd (equation 4) and, when it fires, alpha mu_snd credits
// per second elapsed are added back. alpha corrects the pool towards the
// rate wanted: every rate_sample, while the sender was held back by
// credit, alpha += rho (mu_snd / mu'_snd - 1), mu'_snd being the rate it
// actually sent at (equation 3).
type rateCtl struct {
	l  *Layer
	on bool

	// receiver
	newPkts int64
	samples []float64
	si, n   int
	recv    float64
	sampler *stack.Timer

	// sender
	musnd, alpha float64
	credits      float64
	refill       *stack.Timer
	armedAt      event.Time
	waiting      bool
	sent         int64 // regional packets sent this sample
	starved      bool  // ran out of credit this sample
}

func (rc *rateCtl) init(l *Layer) {
	rc.l = l
	rc.on = l.cfg.RateControlOn
	if !rc.on {
		return
	}
	rc.samples = make([]float64, l.cfg.RateSamples)
	rc.sampler = l.Ctx.NewTimer(rc.sample)
	rc.refill = l.Ctx.NewTimer(rc.refilled)
	rc.musnd = l.cfg.RateMin
	rc.alpha = 1
	rc.credits = float64(l.cfg.Credits)
	l.c.RateNow.Set(int64(rc.musnd))
}

// received counts a new packet at this receiver.
func (rc *rateCtl) received() {
	if !rc.on {
		return
	}
	rc.newPkts++
	if !rc.sampler.Pending() {
		rc.sampler.Reset(rc.l.cfg.RateSample)
	}
}

// recvRate is this node's smoothed receive rate for the token (packets/s).
func (rc *rateCtl) recvRate() uint32 {
	if !rc.on {
		return math.MaxUint32
	}
	return uint32(min(rc.recv, math.MaxUint32-1))
}

// sample closes a sampling interval, at the receiver and at the sender.
func (rc *rateCtl) sample() {
	cfg := &rc.l.cfg
	secs := cfg.RateSample.Seconds()
	rc.samples[rc.si] = float64(rc.newPkts) / secs
	rc.si = (rc.si + 1) % len(rc.samples)
	rc.n = min(rc.n+1, len(rc.samples))
	sum := 0.0
	for _, v := range rc.samples[:rc.n] {
		sum += v
	}
	rc.recv = sum / float64(rc.n)
	rc.newPkts = 0
	// Equation 3: correct the credit refill towards mu_snd, only when
	// credit (not the application) held the sender back.
	if rc.starved && rc.sent > 0 {
		measured := float64(rc.sent) / secs
		rc.alpha = min(4, max(0.25, rc.alpha+cfg.Rho*(rc.musnd/measured-1)))
	}
	rc.sent, rc.starved = 0, false
	if rc.recv > 0 || rc.l.sendQ.Len() > 0 {
		rc.sampler.Reset(cfg.RateSample)
	}
}

// onAck recomputes mu_snd from the fair shares the regions reported
// (equation 2).
func (rc *rateCtl) onAck(l *Layer) {
	if !rc.on {
		return
	}
	murec := math.Inf(1)
	for _, o := range l.out {
		if o.rate > 0 && o.buf.Len() > 0 {
			murec = min(murec, o.rate)
		}
	}
	if math.IsInf(murec, 1) {
		return
	}
	rc.musnd = max(l.cfg.RateMin, (1+l.cfg.Lambda)*murec)
	l.c.RateNow.Set(int64(rc.musnd))
}

// take spends a credit for one regional packet; false when none is left
// (the feed is readied again when credit returns).
func (rc *rateCtl) take() bool {
	if !rc.on {
		return true
	}
	if !rc.sampler.Pending() {
		rc.sampler.Reset(rc.l.cfg.RateSample)
	}
	if rc.credits >= 1 {
		rc.credits--
		rc.sent++
		rc.arm()
		return true
	}
	rc.waiting, rc.starved = true, true
	rc.l.c.CreditWaits.Inc()
	rc.arm()
	return false
}

// arm sets the refill timer by equation 4 when credit is below half.
func (rc *rateCtl) arm() {
	high := float64(rc.l.cfg.Credits)
	if rc.credits >= high/2 || rc.refill.Pending() {
		return
	}
	rc.setTimer()
}

// setTimer arms the refill timer for tau (equation 4), at least a
// microsecond so that the clock moves.
func (rc *rateCtl) setTimer() {
	high := float64(rc.l.cfg.Credits)
	tau := min(high-rc.credits, high/2) / rc.musnd
	rc.armedAt = rc.l.Ctx.Now()
	rc.refill.Reset(max(time.Microsecond, time.Duration(tau*float64(time.Second))))
}

// refilled adds the credit earned since the timer was set.
func (rc *rateCtl) refilled() {
	high := float64(rc.l.cfg.Credits)
	dt := rc.l.Ctx.Now().Sub(rc.armedAt).Seconds()
	rc.credits = min(high, rc.credits+dt*rc.alpha*rc.musnd)
	if rc.credits > high-1 {
		rc.credits = high // within a credit of the top: done
	} else {
		rc.setTimer()
	}
	if rc.waiting {
		rc.waiting = false
		rc.l.feed.Ready()
	}
}

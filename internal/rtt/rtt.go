// Package rtt is the round-trip estimator of TCP (RFC 6298, Jacobson and
// Karels): a smoothed round trip and its mean deviation, from which a
// retransmission timeout follows. reliable keeps one per sender, ring one
// for its successor's token acknowledgements.
package rtt

import "time"

// Estimator is a smoothed round trip; its zero value has no sample yet.
type Estimator struct {
	srtt, rttvar time.Duration
}

// Sample folds one measured round trip into the estimate: the first sets
// srtt to it and rttvar to half of it; later ones move rttvar a quarter
// and srtt an eighth of the way (RFC 6298 section 2).
func (e *Estimator) Sample(r time.Duration) {
	if e.srtt == 0 {
		e.srtt, e.rttvar = r, r/2
		return
	}
	dev := e.srtt - r
	if dev < 0 {
		dev = -dev
	}
	e.rttvar += (dev - e.rttvar) / 4
	e.srtt += (r - e.srtt) / 8
}

// SRTT is the smoothed round trip; 0 before the first sample.
func (e *Estimator) SRTT() time.Duration { return e.srtt }

// RTO is the retransmission timeout the estimate gives, srtt + 4 rttvar
// (the caller bounds it); 0 before the first sample.
func (e *Estimator) RTO() time.Duration { return e.srtt + 4*e.rttvar }

package mflow

import (
	"fmt"
	"math"
	"time"
)

// Workload is what MFLOW section 3 assumes to choose its parameters: n
// processes, one sender multicasting Size-byte messages at Rate messages
// per second, Delay (ε) the typical propagation delay plus interrupt and
// service time, and the receivers' Window in bytes.
type Workload struct {
	N      int
	Size   float64 // bytes per message
	Rate   float64 // messages per second
	Delay  time.Duration
	Window float64 // bytes
}

// Validate says what is wrong with a workload, if anything.
func (w Workload) Validate() error {
	switch {
	case w.N < 2:
		return fmt.Errorf("n must be at least 2 (a sender and a receiver), got %d", w.N)
	case !(w.Size > 0) || math.IsInf(w.Size, 0):
		return fmt.Errorf("size must be a positive number of bytes, got %v", w.Size)
	case !(w.Rate > 0) || math.IsInf(w.Rate, 0):
		return fmt.Errorf("rate must be a positive number of messages per second, got %v", w.Rate)
	case w.Delay < 0:
		return fmt.Errorf("delay must not be negative, got %v", w.Delay)
	case !(w.Window > 0) || math.IsInf(w.Window, 0):
		return fmt.Errorf("window must be a positive number of bytes, got %v", w.Window)
	}
	return nil
}

// MaxAckThresh is equation 6: the largest ack_thresh whose acknowledgements
// come back before the sender's window fills, ack_thresh <= window - 2ε·size·rate.
// It is negative when no ack_thresh avoids delay (the window is smaller than
// what the sender sends in a round trip).
func MaxAckThresh(w Workload) float64 {
	return w.Window - 2*w.Delay.Seconds()*w.Size*w.Rate
}

// SafeAckThresh is equation 6 less one message: the acknowledgement is sent
// with the first message that takes a receiver's count past ack_thresh, so
// it can come up to one message late, and the sender's remaining credit is
// up to one message less than window - ack_thresh (the paper's footnote 1).
// At this threshold the acknowledgements are back in time whatever the
// message boundaries; it is what stacktool mflow-params recommends.
func SafeAckThresh(w Workload) float64 {
	return MaxAckThresh(w) - w.Size
}

// Efficiency is equation 3: the fraction of messages that are application
// messages when every receiver acknowledges every ackThresh bytes.
func Efficiency(n int, size, ackThresh float64) float64 {
	return ackThresh / (ackThresh + size*float64(n-1))
}

// AcksPerMsg is equation 2 divided by the number of messages: the
// acknowledgements each application message causes, size·(n-1)/ack_thresh.
func AcksPerMsg(n int, size, ackThresh float64) float64 {
	return size * float64(n-1) / ackThresh
}

// MaxEfficiency is equation 7: the efficiency at the largest ack_thresh
// that adds no latency, 1 - size(n-1)/(window - 2ε·size·rate + size(n-1)).
// It is 0 when no ack_thresh avoids delay.
func MaxEfficiency(w Workload) float64 {
	t := MaxAckThresh(w)
	if t <= 0 {
		return 0
	}
	return 1 - w.Size*float64(w.N-1)/(t+w.Size*float64(w.N-1))
}

package mflow

import (
	"fmt"
	"io"
	"time"

	"github.com/layercast/layercast/compose"
)

// paramsTool is `stacktool mflow-params`, added through mflow's
// registration (compose.Tool): the command line needs no import of mflow.
var paramsTool = compose.Tool{
	Name:  "mflow-params",
	Usage: "the largest mflow ack_thresh that adds no latency (equation 6), and its efficiency (equation 7)",
	Description: "MFLOW section 3: with n processes, one sender multicasting --size-byte messages (as mflow\n" +
		"weighs them: payload plus overhead) at --rate messages per second, a delay --delay (propagation\n" +
		"plus interrupt and service time) and a receiver window of --window bytes, acknowledgements come\n" +
		"back before the window fills when ack_thresh <= window - 2*delay*size*rate (equation 6). The\n" +
		"threshold printed is that bound less one message (an acknowledgement goes with the first message\n" +
		"past the threshold, so it can be one message late: the paper's footnote 1), with its efficiency\n" +
		"(application messages over all messages, equation 3) and equation 7's bound.\n" +
		"Example: stacktool mflow-params --n 10 --size 1000 --rate 1000 --delay 2ms --window 50KB",
	Flags: []compose.ToolFlag{
		{Param: compose.Param{Name: "n", Type: compose.Int, Doc: "processes in the group (at least 2)"}, Required: true},
		{Param: compose.Param{Name: "size", Type: compose.Size, Doc: "message size in bytes, e.g. 1100 or 1KB"}, Required: true},
		{Param: compose.Param{Name: "rate", Type: compose.Float, Doc: "the sender's messages per second"}, Required: true},
		{Param: compose.Param{Name: "delay", Type: compose.Duration, Doc: "typical one-way delay ε with a unit, e.g. 2ms"}, Required: true},
		{Param: compose.Param{Name: "window", Type: compose.Size, Default: "50000", Doc: "receiver window in bytes, e.g. 50000 or 50KB"}},
	},
	Run: func(p compose.Params, out io.Writer) error {
		w, err := workloadOf(p)
		if err != nil {
			return err
		}
		return printParams(out, w)
	},
}

// workloadOf is the workload the tool's flags describe; an error names the
// flag.
func workloadOf(p compose.Params) (Workload, error) {
	w := Workload{N: p.Int("n"), Size: float64(p.Int("size")), Rate: p.Float("rate"), Delay: p.Duration("delay"), Window: float64(p.Int("window"))}
	if err := w.Validate(); err != nil {
		return w, fmt.Errorf("--%s", err)
	}
	return w, nil
}

// printParams prints the advice for a workload, or says why none exists.
func printParams(out io.Writer, w Workload) error {
	bound := MaxAckThresh(w)
	inFlight := w.Window - bound
	t := SafeAckThresh(w)
	if t < 1 {
		return fmt.Errorf("no ack_thresh avoids delay: in a round trip (2 x %v) the sender sends %.0f bytes, and one more message makes %.0f, at least the %.0f-byte window; use a window above %.0f bytes or a lower rate",
			w.Delay, inFlight, inFlight+w.Size, w.Window, inFlight+w.Size)
	}
	thresh := int64(t)
	fmt.Fprintf(out, "ack_thresh  %d bytes   (equation 6: window - 2 x %v x %.0f B x %g/s = %.0f, less one %.0f-byte message)\n",
		thresh, w.Delay, w.Size, w.Rate, bound, w.Size)
	fmt.Fprintf(out, "efficiency  %.4f        (equation 3 at that ack_thresh, %.3f acks per message; equation 7's bound: %.4f)\n",
		Efficiency(w.N, w.Size, float64(thresh)), AcksPerMsg(w.N, w.Size, float64(thresh)), MaxEfficiency(w))
	fmt.Fprintf(out, "Each of the %d receivers acknowledges every %d bytes; the sender can go on for %v after that, as long as the "+
		"acknowledgement's round trip (%v) plus one message, so mflow adds no latency. Spec: mflow(window=%.0f, ack_thresh=%d)\n",
		w.N-1, thresh, time.Duration((w.Window-float64(thresh))/(w.Size*w.Rate)*float64(time.Second)).Round(time.Microsecond), 2*w.Delay, w.Window, thresh)
	// Staggering's cost is buffer, not latency: its receivers' headroom
	// (the package doc) keeps the sender from waiting more than without
	// it, past equation 6's bound as well.
	if w.N < 3 {
		return nil // one receiver: nothing to stagger
	}
	fmt.Fprintf(out, "With stagger=on (the default) the acknowledgements arrive %d bytes apart instead of %d at once, and each of the %d "+
		"staggered receivers may have to hold window + ack_thresh = %.0f bytes (the one at offset 0 and every receiver with "+
		"stagger=off: %.0f). Above this ack_thresh the sender waits for credit, staggered or not.\n",
		thresh/int64(w.N-1), w.N-1, w.N-2, w.Window+float64(thresh), w.Window)
	return nil
}

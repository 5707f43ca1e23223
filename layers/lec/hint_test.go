package lec

import (
	"bytes"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// hintProbe sits above lec: it records the loss hints lec sends up and
// can send one down.
type hintProbe struct {
	stack.Base
	hints   []event.LostRange
	anchors [][]byte
}

func (p *hintProbe) Up(ev *event.Event) {
	if ev.Kind != event.LossHint {
		p.Ctx.Up(ev)
		return
	}
	p.hints = append(p.hints, *ev.Lost)
	var a []byte
	if ev.Msg != nil {
		a = bytes.Clone(ev.Msg.Bytes())
		ev.Msg.Release()
	}
	p.anchors = append(p.anchors, a)
}

// found hands lec packet i (seq i+1 from node 2 in group 9) as a
// retransmission the layer above got.
func (p *hintProbe) found(tn *testNode, i int) {
	tn.st.Inject(tn.at, false, event.Event{Kind: event.LossHint, Group: 9, Peer: 2,
		Lost: &event.LostRange{First: uint32(i + 1), End: uint32(i + 2), Bounded: true}, Msg: event.DefaultPool.FromBytes(tn.data[i])})
}

// A repair lec cannot decode tells the layer above at once which packets
// it lacks, anchored on the newest packet of the stream it holds (its
// bytes as passed up, the first anchorBytes); a repair it can decode tells
// nothing.
func TestLossHintAnchoredOnNewest(t *testing.T) {
	p := &hintProbe{}
	tn := newTestNode(t, stack.Entry{Name: "probe", Layer: p})
	tn.arrive(0)
	tn.arrive(1) // 1000 bytes: the anchor is its first anchorBytes
	tn.repairOf(1, 2, 3)
	if len(p.hints) != 2 {
		t.Fatalf("%d hints after a repair missing packets 3 and 4, want 2: %+v", len(p.hints), p.hints)
	}
	for i, h := range p.hints {
		want := event.LostRange{First: 3, End: uint32(4 + i), Bounded: true}
		if h != want {
			t.Errorf("hint %d = %+v, want %+v (anchor seq 2 = First-1, missing End-1)", i, h, want)
		}
		if !bytes.Equal(p.anchors[i], tn.data[1][:anchorBytes]) {
			t.Errorf("hint %d anchor = %d bytes %x..., want the first %d bytes of packet 2", i, len(p.anchors[i]), p.anchors[i][:min(4, len(p.anchors[i]))], anchorBytes)
		}
	}
	// Known losses are not told twice; a decodable repair tells nothing.
	tn.repairOf(0, 2, 3)
	tn.arrive(2)
	tn.arrive(4)
	tn.repairOf(2, 4, 5)
	if len(p.hints) != 2 || tn.l.c.LossHints.Value() != 2 {
		t.Errorf("%d hints (counter %d) after repeats and a decodable repair, want 2", len(p.hints), tn.l.c.LossHints.Value())
	}
}

// A packet the layer above got by other means (a NAK retransmission)
// decodes the repair that waited for it, and no repair rebuilds it again:
// lec counts only its own recovery.
func TestFoundAboveDecodesAndIsNotRecoveredAgain(t *testing.T) {
	p := &hintProbe{}
	tn := newTestNode(t, stack.Entry{Name: "probe", Layer: p})
	tn.arrive(0)
	tn.repairOf(0, 1, 2) // 1 and 2 missing: unusable
	p.found(tn, 1)
	tn.check(t, 2, "lec")
	for _, d := range tn.got {
		if bytes.Equal(d.Payload, tn.data[1]) {
			t.Errorf("packet 1, handed down by the layer above, was delivered up again")
		}
	}
	tn.repairOf(1, 3) // 3 missing: rebuilt from the found packet
	tn.check(t, 3, "lec")
	tn.repairOf(0, 1) // 1 present: redundant
	if got := tn.l.c.Recovered.Value(); got != 2 {
		t.Errorf("lec recovered %d, want 2 (packets 2 and 3; packet 1 came from above)", got)
	}
	if got := tn.l.c.Found.Value(); got != 1 {
		t.Errorf("found_above = %d, want 1", got)
	}
	// Handing down a packet lec holds does nothing.
	p.found(tn, 1)
	if got := tn.l.c.Found.Value(); got != 1 {
		t.Errorf("found_above = %d after a repeat, want 1", got)
	}
}

// A retransmission going down (a message with a Recovery) takes no lec
// number: data casts around it get consecutive numbers, so the NAK layer's
// numbers and lec's advance together.
func TestRetransmissionTakesNoNumber(t *testing.T) {
	tn := newTestNode(t)
	cast := func(by string) {
		m := event.DefaultPool.FromBytes([]byte("payload"))
		m.Recovery.By = by
		tn.st.Inject(tn.at, false, event.Event{Kind: event.Cast, Group: 9, Msg: m})
	}
	cast("")
	cast("nak")
	cast("")
	if got := tn.l.sendSeq[9]; got != 2 {
		t.Errorf("after two casts around a retransmission lec numbered %d, want 2", got)
	}
	if got := tn.l.c.DataSent.Value(); got != 2 {
		t.Errorf("data_sent = %d, want 2", got)
	}
}

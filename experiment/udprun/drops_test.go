package udprun

import (
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/udp"
)

// TestAggregateDrops checks the udp network's drop accounting from
// workers' reports: the model's drops tied to messages make the later
// deliveries of those messages recoveries; the kernel's drops (SO_RXQ_OVFL)
// count as dropped_by.kernel, tied to no message; a delivery a layer marked
// recovered with no drop recorded is not counted as recovered. Before the
// fix the kernel's drops were not told apart from the others, and every
// marked delivery was a recovery (3 here, 2 of them with no drop).
func TestAggregateDrops(t *testing.T) {
	sc, asg, spec := threeNodeFifoReliable(t)
	tx := asg.Senders[0]
	g := asg.Of[tx][0]
	var ws []*worker
	for _, id := range asg.Nodes {
		w := &worker{id: id, done: true, rep: &WorkerReport{Node: id}}
		if id == tx {
			w.rep.Sent = []SentCount{{Group: g, Count: 4}}
		} else {
			for i := uint64(0); i < 4; i++ {
				r := Record{Group: g, Sender: tx, Index: i, At: event.Time(10 + i)}
				if i == 1 || i == 3 {
					r.By, r.At = "nak", 20+r.At
				}
				w.rep.Deliveries = append(w.rep.Deliveries, r)
			}
			w.rep.Transport = udp.Stats{KernelDrops: 5}
		}
		ws = append(ws, w)
	}
	// The first receiver's loss model dropped message 1 (and one packet
	// it could not read); message 3 came back marked, after a kernel drop
	// no one can tie to it.
	rx := ws[0]
	if rx.id == tx {
		rx = ws[1]
	}
	rx.rep.LossData = 2
	rx.rep.Drops = []Record{{Group: g, Sender: tx, Index: 1, At: 11}}
	rep := aggregate(spec, sc, asg, ws, 0, 100, 0, nil)
	l := rep.Loss
	if l.DroppedBy.Model != 2 || l.DroppedBy.Kernel != 10 || l.Dropped != 12 {
		t.Errorf("dropped %d by %+v, want 12: model 2, kernel 10", l.Dropped, l.DroppedBy)
	}
	if l.Recovered != 1 || l.RecoveredBy["nak"] != 1 || l.RecoveredWithoutDrop != 3 {
		t.Errorf("recovered %d by %v, without drop %d: want 1 (message 1 at %v), nak 1, and 3", l.Recovered, l.RecoveredBy, l.RecoveredWithoutDrop, rx.id)
	}
	if l.Recovered > l.Dropped || l.RecoveredPct == nil || *l.RecoveredPct > 100 {
		t.Errorf("recovered %d of %d dropped, pct %v", l.Recovered, l.Dropped, l.RecoveredPct)
	}
	if want := (experiment.DropOutcome{Recovered: 1, Untied: 11}); l.DropOutcome != want {
		t.Errorf("drop outcome %+v, want %+v", l.DropOutcome, want)
	}
	if l.DroppedByModel != 2 || l.DroppedOverflow != 10 {
		t.Errorf("flat fields: dropped_by_model %d, dropped_overflow %d; want 2 and 10 as before", l.DroppedByModel, l.DroppedOverflow)
	}
}

// TestLossRecord: a dropped data packet's message is read from its tail.
func TestLossRecord(t *testing.T) {
	l := &lossySink{size: 40, now: func() event.Time { return 9 }}
	p := make([]byte, stack.FrameSize+40)
	experiment.PutStamp(p[stack.FrameSize:], experiment.Stamp{Sender: 3, Group: 2, Index: 7})
	if r, ok := l.record(p); !ok || r != (Record{Group: 2, Sender: 3, Index: 7, At: 9}) {
		t.Errorf("record = %+v, %v", r, ok)
	}
	if _, ok := l.record(p[:len(p)-1]); ok {
		t.Error("a packet shorter than a frame and a message was read")
	}
}

// FuzzLossRecord: any dropped packet is read or refused, never a panic.
func FuzzLossRecord(f *testing.F) {
	f.Add(make([]byte, stack.FrameSize+24), 24)
	f.Add([]byte{1, 2, 3}, 64)
	f.Add(make([]byte, 100), 0)
	f.Fuzz(func(t *testing.T, p []byte, size int) {
		l := &lossySink{size: size % 4096, now: func() event.Time { return 1 }}
		if r, ok := l.record(p); ok && r.At != 1 {
			t.Fatalf("record at %v", r.At)
		}
	})
}

// Over UDP the report names the broken promises' cases as on the
// simulator, from the workers' logs: the message a receiver never got, the
// one it delivered twice, the one it delivered out of order.
func TestAggregateNamesCases(t *testing.T) {
	sc, asg, spec := threeNodeFifoReliable(t)
	tx := asg.Senders[0]
	g := asg.Of[tx][0]
	var ws []*worker
	var rxs []event.NodeID
	for _, id := range asg.Nodes {
		w := &worker{id: id, done: true, rep: &WorkerReport{Node: id}}
		if id == tx {
			w.rep.Sent = []SentCount{{Group: g, Count: 6}}
		} else {
			rxs = append(rxs, id)
		}
		ws = append(ws, w)
	}
	order := map[event.NodeID][]uint64{rxs[0]: {0, 1, 2, 3, 4, 5}, rxs[1]: {0, 2, 1, 3, 3, 4}} // rxs[1]: 1 late, 3 twice, 5 missing
	for _, w := range ws {
		for k, i := range order[w.id] {
			w.rep.Deliveries = append(w.rep.Deliveries, Record{Group: g, Sender: tx, Index: i, At: event.Time(1000 * (k + 1))})
		}
	}
	rep := aggregate(spec, sc, asg, ws, 0, 100000, 0, nil)
	if rep.MissingUnexplained != 1 || rep.Duplicates != 1 || rep.FIFOViolations != 1 {
		t.Fatalf("missing %d, duplicates %d, fifo %d; want 1 each", rep.MissingUnexplained, rep.Duplicates, rep.FIFOViolations)
	}
	m := rep.MissingExamples
	if len(m) != 1 || m[0].Receiver != rxs[1] || m[0].Sender != tx || m[0].Group != g || m[0].Index != 5 || m[0].Count != 1 ||
		m[0].NeverSent != nil || m[0].StreamDelivered != 5 || m[0].NextDelivered != nil {
		t.Errorf("missing examples %+v, want %v's #5 at %v, the stream's tail, never_sent unknown", m, tx, rxs[1])
	}
	d, f := rep.DuplicateExamples, rep.FIFOViolationExamples
	if len(d) != 1 || d[0].Receiver != rxs[1] || d[0].Index != 3 || d[0].AtMs != 0.005 {
		t.Errorf("duplicate examples %+v, want #3 at %v, 5µs in", d, rxs[1])
	}
	if len(f) != 1 || f[0].Receiver != rxs[1] || f[0].Index != 1 || f[0].After == nil || *f[0].After != 2 {
		t.Errorf("fifo examples %+v, want #1 after #2 at %v", f, rxs[1])
	}
}

// threeNodeFifoReliable is the work both aggregate tests hand-feed: 3
// nodes, one group of 3, one sender, under fifo : reliable.
func threeNodeFifoReliable(t *testing.T) (experiment.Scenario, *experiment.Assignment, *compose.Spec) {
	t.Helper()
	sc := experiment.Default()
	sc.Nodes, sc.GroupsPerNode, sc.GroupSize, sc.Senders = 3, 1, 3, 1
	asg, err := experiment.Assign(sc)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := compose.Parse("fifo : reliable")
	if err != nil {
		t.Fatal(err)
	}
	return sc, asg, spec
}

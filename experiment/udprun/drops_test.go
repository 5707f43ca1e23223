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

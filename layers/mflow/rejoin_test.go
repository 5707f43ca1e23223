package mflow

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// installAt gives only the listed nodes view v.
func (c *cluster) installAt(v *event.ViewInfo, ids ...event.NodeID) {
	for _, id := range ids {
		c.stacks[id].InstallView(v)
	}
}

// joinAll makes every node's application ask to join the group (as it
// does under gms, and still has asked while removed).
func joinAll(t *testing.T, c *cluster) {
	t.Helper()
	for _, id := range c.ids {
		if err := c.stacks[id].Join(c.g); err != nil {
			t.Fatal(err)
		}
	}
}

// rejoinViews returns, after the cluster's current view, the removal view
// node gone gets (R1: members without it, it in Left) and the view that
// readmits it (R2: members unchanged for the others, gone in Joined and
// Left), with the IDs the service would give them.
func rejoinViews(c *cluster, gone event.NodeID) (removal, readmit *event.ViewInfo) {
	var rest []event.NodeID
	for _, id := range c.ids {
		if id != gone {
			rest = append(rest, id)
		}
	}
	viewID++
	removal = &event.ViewInfo{Group: c.g, ID: viewID, Members: rest, Left: []event.NodeID{gone}}
	viewID++
	readmit = &event.ViewInfo{Group: c.g, ID: viewID, Members: append([]event.NodeID(nil), c.ids...),
		Joined: []event.NodeID{gone}, Left: []event.NodeID{gone}}
	return removal, readmit
}

// checkRejoin asserts the end state after a removal and readmission: every
// cast was sent and delivered in order at every other node (the cluster
// fails on a gap or a duplicate), and the sender's credit for each
// receiver (its queued acknowledgements applied) is exact.
func checkRejoin(t *testing.T, c *cluster, sender event.NodeID, sent *int, msgs int) {
	t.Helper()
	if *sent != msgs {
		t.Fatalf("sender %v cast %d of %d: stalled after the readmission", sender, *sent, msgs)
	}
	for _, id := range c.ids {
		if id != sender && c.delivered[id][sender] != uint64(msgs) {
			t.Errorf("node %v delivered up to %d from %v, want %d", id, c.delivered[id][sender], sender, msgs)
		}
	}
	s := c.layers[sender].send[c.g]
	if s == nil || s.q.len() != 0 {
		t.Fatalf("sender %v: casts still queued at the end", sender)
	}
	for i, n := range s.nodes {
		r := c.layers[n].recv[rkey{c.g, sender}]
		if r == nil {
			t.Errorf("receiver %v keeps no count of %v", n, sender)
			continue
		}
		if want := exactLimit(c.layers[sender], s.cr.sent, r); s.cr.credited(i) != want {
			t.Errorf("receiver %v: sender's credit %d, want %d", n, s.cr.credited(i), want)
		}
	}
	if n := c.total("bad_acks"); n != 0 {
		t.Errorf("%d genuine acknowledgements refused as implausible", n)
	}
}

// TestRemovedSenderKeepsQueuedCasts: issue 8's last soak failure (seed
// 479). A sender held back by a slow receiver has casts queued for credit
// when it is removed (R1) and readmitted (R2, in Joined). The casts the
// stack accepted must still go out, in order, in the readmitting view:
// mflow used to release its queue on the removal view, so they were never
// sent and never delivered (nothing the removal explains).
func TestRemovedSenderKeepsQueuedCasts(t *testing.T) {
	for _, senderFirst := range []bool{true, false} {
		cfg := Config{Window: 20000, AckThresh: 10000, Overhead: 100, HiWmark: 20, Stagger: true}
		// 20ms latency: the window allows far less than the cast rate,
		// so the queue fills and the application is held off.
		c := newCluster(t, 3, cfg, 20*time.Millisecond)
		joinAll(t, c)
		const msgs = 400
		sent := c.castEvery(1, 1000, msgs, 100*time.Microsecond, 0)
		c.net.Run(100 * time.Millisecond)
		if q := c.layers[1].send[c.g].q.len(); q == 0 {
			t.Fatalf("no casts queued for credit before the removal: the test does not exercise it")
		}
		removal, readmit := rejoinViews(c, 1)
		c.installAt(removal, 1)
		c.net.Run(30 * time.Millisecond)
		if senderFirst {
			c.installAt(readmit, 1)
			c.net.Run(2 * time.Millisecond)
			c.installAt(readmit, 2, 3)
		} else {
			c.installAt(readmit, 2, 3)
			c.net.Run(2 * time.Millisecond)
			c.installAt(readmit, 1)
		}
		c.net.Run(3 * time.Second)
		checkRejoin(t, c, 1, sent, msgs)
	}
}

// TestReadmittedReceiverStartsAfresh: rejoin contract R3 on the sender's
// side. A receiver removed (it got R1 and dropped its count) and readmitted
// in one batch (the sender never installed the removal: members unchanged,
// the receiver in Joined) must get a fresh window. Treated as continuing it
// kept the credit it had used up, which its dropped count can never
// return: the sender stalled for good.
func TestReadmittedReceiverStartsAfresh(t *testing.T) {
	for _, senderFirst := range []bool{true, false} {
		cfg := EnsembleConfig()
		c := newCluster(t, 3, cfg, time.Millisecond)
		joinAll(t, c)
		const msgs = 1500
		sent := c.castEvery(1, 1000, msgs, 200*time.Microsecond, 0)
		c.net.Run(50 * time.Millisecond)
		removal, readmit := rejoinViews(c, 3)
		c.installAt(removal, 3)
		// Node 3, out of the group, takes node 1's multicasts uncounted
		// until the sender runs out of its credit.
		c.net.Run(40 * time.Millisecond)
		if senderFirst {
			c.installAt(readmit, 1, 2)
			c.net.Run(2 * time.Millisecond)
			c.installAt(readmit, 3)
		} else {
			c.installAt(readmit, 3)
			c.net.Run(2 * time.Millisecond)
			c.installAt(readmit, 1, 2)
		}
		c.net.Run(3 * time.Second)
		checkRejoin(t, c, 1, sent, msgs)
	}
}

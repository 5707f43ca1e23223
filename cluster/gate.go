package cluster

import "sync"

// gate guards bounded channels that are closed while senders may be
// waiting on them (chans behind a Cluster, and Inbox): every send holds mu
// for reading and shut holds it for writing, so no channel is closed while
// a send is in flight, and closing done first makes a waiting send give up.
type gate struct {
	mu     sync.RWMutex
	closed bool
	done   chan struct{} // closed by shut: a waiting send gives up
	once   sync.Once     // closes done
}

func newGate() gate { return gate{done: make(chan struct{})} }

// gatedPut sends v on ch, waiting while ch is full, unless the gate is (or
// gets) shut.
func gatedPut[T any](g *gate, ch chan T, v T) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return
	}
	select {
	case ch <- v:
	case <-g.done:
	}
}

// shut ends every waiting send and then, once, runs closeAll (which closes
// the channels; what they hold can still be read).
func (g *gate) shut(closeAll func()) {
	// done first: a send waiting with the read lock held gives up, so the
	// write lock below can be had.
	g.once.Do(func() { close(g.done) })
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.closed = true
	closeAll()
}

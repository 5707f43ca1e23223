package udp

import (
	"testing"
	"time"

	"github.com/layercast/layercast/stack"
)

// keepSink takes every batch and never gives it back, as a Node closed
// with batches in its inbox does.
type keepSink chan *stack.Batch

func (k keepSink) Input(b *stack.Batch) bool { k <- b; return true }

// TestCloseWithBatchesKept: Close returns even when the sink kept every
// read batch, so the reader waits for one that will never come back
// (before, Close waited for that reader for ever, and a bench worker
// never reported).
func TestCloseWithBatchesKept(t *testing.T) {
	kept := make(keepSink, 8)
	rx, err := New(Config{Self: 2, Batches: 1, BatchSize: 1}, kept)
	if err != nil {
		t.Fatal(err)
	}
	tx := toward(t, Config{Self: 1}, nil, 2, rx)
	tx.Send(2, []byte("one"))
	select {
	case <-kept:
	case <-time.After(2 * time.Second):
		t.Fatal("the first packet never arrived")
	}
	tx.Send(2, []byte("two")) // the reader now waits for its only batch
	time.Sleep(20 * time.Millisecond)
	closed := make(chan error)
	go func() { closed <- rx.Close() }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not return while the sink kept the reader's batch")
	}
}

package stack_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// holdOdd holds each cast whose first payload byte is odd until the next
// cast arrives (in the next batch), then delivers it before that one; it
// keeps the held message as Compact's result when compact is set, as it
// is (Retain) otherwise.
type holdOdd struct {
	stack.Base
	compact bool
	held    *event.Message
}

func (l *holdOdd) Up(ev *event.Event) {
	if ev.Kind != event.Cast || ev.Msg == nil {
		l.Ctx.Up(ev)
		return
	}
	if h := l.held; h != nil {
		l.held = nil
		l.Ctx.Up(&event.Event{Kind: event.Cast, Group: ev.Group, Peer: ev.Peer, Msg: h})
	}
	if ev.Msg.Bytes()[0]%2 == 1 {
		m := ev.Msg
		if l.compact {
			m = m.Compact()
		} else {
			m.Retain()
			ev.Msg.Release()
		}
		l.held = m
		return
	}
	l.Ctx.Up(ev)
}

func (l *holdOdd) Close() { l.held.Release() }

// compactHold is holdOdd as a CompactHolder (compact says whether it keeps
// its word).
type compactHold struct{ holdOdd }

func (*compactHold) HoldsCompact() {}

// A node shares a transport's batch with the messages made of it and
// gives it back exactly once, after the last of them is released; a
// message a layer holds past its batch keeps its bytes while the batch's
// buffers are scribbled over (read into again). A stack whose layers all
// keep compacted copies gives every batch back within its step; one with
// a layer that is not a CompactHolder copies every packet, so it does
// too; a layer that claims to be one and retains anyway only delays the
// batch's return until it lets go.
func TestNodeSharesBatchesAndReturnsThemOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layer  stack.Layer
		shares bool
		late   bool // batches with a held message come back only when it is delivered
	}{
		{"compact holder", &compactHold{holdOdd{compact: true}}, true, false},
		{"retains, not a holder", &holdOdd{}, false, false},
		{"retains, claims to hold compact", &compactHold{}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { sharedBatches(t, tc.layer, tc.shares, tc.late) })
		})
	}
}

func sharedBatches(t *testing.T, layer stack.Layer, shares, late bool) {
	const batches = 20
	payload := func(i int) []byte { return append([]byte{byte(i)}, bytes.Repeat([]byte{'x'}, 99)...) }
	var (
		mu   sync.Mutex
		got  [][]byte
		done = map[*stack.Batch]int{}
	)
	nd, err := stack.NewNode(stack.NodeConfig{Stack: stack.Config{
		Self: 1, Transport: &testkit.Transport{}, Layers: []stack.Entry{{Name: "hold", Layer: layer}},
		App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
			mu.Lock()
			got = append(got, bytes.Clone(d.Payload))
			mu.Unlock()
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var sharing bool
	if err := nd.Do(func(st *stack.Stack) { sharing = st.Shares() }); err != nil || sharing != shares {
		t.Fatalf("Shares() = %v (%v), want %v", sharing, err, shares)
	}
	// batch k holds casts 2k and 2k+1 (odd: held into batch k+1); the
	// last holds one even cast, which releases the last held one
	all := make([]*stack.Batch, batches+1)
	for k := range all {
		bufs := [][]byte{}
		for i := 2 * k; i < 2*k+2 && (k < batches || i == 2*k); i++ {
			pkt := make([]byte, stack.FrameSize, stack.FrameSize+100)
			stack.PutFrame(pkt, stack.Frame{Kind: event.Cast, Group: 1, Src: 2})
			bufs = append(bufs, append(pkt, payload(i)...))
		}
		all[k] = &stack.Batch{Pkts: append([][]byte(nil), bufs...), Done: func(b *stack.Batch) {
			mu.Lock()
			done[b]++
			mu.Unlock()
			for _, p := range bufs {
				for i := range p {
					p[i] = 0xEE // the transport reads into it again
				}
			}
		}}
	}
	for k, b := range all {
		if !nd.Input(b) {
			t.Fatal("node refused a batch")
		}
		synctest.Wait()
		mu.Lock()
		n := done[b]
		mu.Unlock()
		if want := 1; late && k < batches {
			want = 0 // its odd cast is still held
			if n != want {
				t.Errorf("batch %d given back %d times while its odd cast is held", k, n)
			}
		} else if n != want {
			t.Errorf("batch %d given back %d times after its step, want %d", k, n, want)
		}
	}
	nd.Close()
	mu.Lock()
	defer mu.Unlock()
	for k, b := range all {
		if done[b] != 1 {
			t.Errorf("batch %d given back %d times, want once", k, done[b])
		}
	}
	var want [][]byte
	for i := range 2*batches + 1 {
		want = append(want, payload(i))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("delivered %d payloads, want %d in order and intact: got %q", len(got), len(want), got)
	}
}

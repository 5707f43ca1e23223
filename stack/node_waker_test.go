package stack_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// wakerPort is a transport that drops everything and records WakeIn.
type wakerPort struct {
	testkit.Transport
	mu sync.Mutex
	ds []time.Duration
}

func (p *wakerPort) WakeIn(d time.Duration) {
	p.mu.Lock()
	p.ds = append(p.ds, d)
	p.mu.Unlock()
}

// TestNodeWakesTransport: a Node whose transport is a stack.Waker tells
// it, each time it re-arms its timer, how far away the next timer is: a
// layer ticking every 300us gives WakeIn(300us) once at start and once
// after each firing.
func TestNodeWakesTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &wakerPort{}
		tl := &testkit.Ticker{Period: 300 * time.Microsecond}
		nd, err := stack.NewNode(stack.NodeConfig{Stack: stack.Config{
			Self: 1, Transport: p, Layers: []stack.Entry{{Name: "tick", Layer: tl}}}})
		if err != nil {
			t.Fatal(err)
		}
		// The first arming happens after the node's first step.
		if err := nd.Do(func(*stack.Stack) {}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1000 * time.Microsecond)
		synctest.Wait()
		nd.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(tl.Fired) != 3 || len(p.ds) != 4 {
			t.Fatalf("%d firings, WakeIn %v; want 3 firings and 4 calls", len(tl.Fired), p.ds)
		}
		for i, d := range p.ds {
			if d != 300*time.Microsecond {
				t.Errorf("WakeIn call %d: %v, want 300us", i, d)
			}
		}
	})
}

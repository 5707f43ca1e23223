package stack_test

import (
	"strings"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// DropMalformed counts the packet, logs it, and releases its message: the
// one reference the layer held is gone.
func TestDropMalformed(t *testing.T) {
	l := &bindLayer{}
	var lines []string
	newStopped(t, stack.Config{Log: func(s string) { lines = append(lines, s) },
		Layers: []stack.Entry{{Name: "bind", Layer: l}}})
	m := event.DefaultPool.FromBytes([]byte{1, 2, 3})
	m.Retain() // the test's own reference, to see the layer's go
	l.Ctx.DropMalformed(&event.Event{Kind: event.Cast, Peer: 4, Msg: m}, l.c.Sent)
	if l.c.Sent.Value() != 1 {
		t.Errorf("counter %d, want 1", l.c.Sent.Value())
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "dropping malformed") || !strings.Contains(lines[0], "(3 bytes)") {
		t.Errorf("log %q, want one line saying a malformed packet of 3 bytes was dropped", lines)
	}
	m.Release() // the last reference: a second release by DropMalformed would make this panic
	defer func() {
		if recover() == nil {
			t.Error("the message was not released by DropMalformed")
		}
	}()
	m.Release()
}

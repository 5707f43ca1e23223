package lec

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/testkit"
)

// Issue 8 item 5 (the flood probe in tests/fuzz): max_held_bytes bounds the
// memory held data keeps alive, not only its bytes. A pooled buffer keeps
// the capacity of the largest packet it ever carried, so after a flood of
// large packets small data packets each pinned 16 KB while counting their
// 16 bytes: 1,000 of them (under max_held 1024) kept 16 MB alive under a
// 256 KB bound.
func TestHeldDataBoundsTheBuffers(t *testing.T) {
	cfg := hardConfig() // max_held 1024, max_held_bytes 256 KB
	hn := newHardNode(t, cfg)
	const n, pinned = 1000, 16 << 10
	before := testkit.LiveHeap()
	big := make([]byte, pinned)
	for seq := uint32(1); seq <= n; seq++ {
		m := event.DefaultPool.FromBytes(big)
		b := m.Bytes()
		b[0] = typeData
		binary.BigEndian.PutUint32(b[1:], seq)
		m.Truncate(dataHeader + 16)
		hn.st.Inject(0, true, event.Event{Kind: event.Cast, Group: 9, Peer: 2, Msg: m})
	}
	held := testkit.LiveHeap() - before
	if hn.delivered != n {
		t.Fatalf("%d of %d delivered", hn.delivered, n)
	}
	s := hn.l.state()
	if s.held == 0 || s.heldBytes > cfg.MaxHeldBytes {
		t.Errorf("%d packets held, %d bytes counted: want some, at most %d", s.held, s.heldBytes, cfg.MaxHeldBytes)
	}
	// the bound, and the map, queue and free list of up to max_held entries
	if max := cfg.MaxHeldBytes + int64(cfg.MaxHeld)*256 + 64<<10; held > max {
		t.Errorf("%d data packets of 16 bytes in %d-byte buffers: %d bytes live, want at most %d", n, pinned, held, max)
	}
	runtime.KeepAlive(hn)
}

package auth

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// FuzzTruncatedCounted cuts a genuine packet (a cast, a point-to-point
// message, a membership packet; in each of the three modes) anywhere
// after the stack's frame, and checks the receiver delivers nothing of it
// and counts it once among its drops: a cut inside auth's header as
// malformed, a cut in the body or tag as a bad tag.
func FuzzTruncatedCounted(f *testing.F) {
	for mi := range uint8(3) {
		for which := range uint8(3) {
			f.Add(mi, which, uint16(0))
			f.Add(mi, which, uint16(9))
		}
	}
	f.Fuzz(func(t *testing.T, mi, which uint8, cut uint16) {
		mode := modes[int(mi)%len(modes)]
		p := newPair(t, Config{Key: testKey, Crypt: mode.crypt, HMAC: mode.hmac, Window: 64, Grace: time.Second, MaxSenders: 4})
		p.view(3)
		switch which % 3 {
		case 0:
			_ = p.snd.Cast(5, []byte("seed payload"))
		case 1:
			_ = p.snd.Send(2, []byte("p2p"))
		case 2:
			p.snd.Inject(0, false, event.Event{Kind: event.Membership, Peer: 2, Msg: event.DefaultPool.FromBytes([]byte("hb"))})
		}
		sent := p.sent()
		if len(sent) != 1 {
			t.Fatalf("sender sent %d packets, want 1", len(sent))
		}
		full := sent[0]
		b := full[:stack.FrameSize+int(cut)%(len(full)-stack.FrameSize)]
		c := &p.rl.c
		drops := func() int64 {
			return c.Malformed.Value() + c.BadTag.Value() + c.Replayed.Value() + c.NoKey.Value() + c.SendersFull.Value()
		}
		before := drops()
		_ = p.rcv.Receive(b)
		if len(p.delivered) != 0 || c.Verified.Value() != 0 {
			t.Fatalf("a cut packet (%d bytes of %d) was delivered: %q, %d verified", len(b), len(full), p.delivered, c.Verified.Value())
		}
		if got := drops() - before; got != 1 {
			t.Fatalf("a cut packet (%d bytes of %d) counted %d times among the drops, want 1", len(b), len(full), got)
		}
	})
}

package testkit_test

import (
	"bytes"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

var (
	_ stack.Transport = (*testkit.Transport)(nil)
	_ stack.Transport = (*testkit.ChannelTransport)(nil)
	_ stack.Channels  = (*testkit.ChannelTransport)(nil)
)

func TestRecordsCopiesInOrder(t *testing.T) {
	tr := &testkit.Transport{Record: true}
	b := []byte("one")
	tr.Send(2, b)
	b[0] = 'X' // the caller reuses its buffer: the record must not change
	tr.Multicast(7, []byte("two"))
	got := tr.Packets()
	if len(got) != 2 || got[0].To != 2 || got[0].Group != event.NoGroup || string(got[0].Data) != "one" ||
		got[1].To != event.NoNode || got[1].Group != 7 || string(got[1].Data) != "two" {
		t.Fatalf("recorded %+v", got)
	}
	if tr.Sends != 1 || tr.Multicasts != 1 {
		t.Fatalf("counted %d sends, %d multicasts", tr.Sends, tr.Multicasts)
	}
	var flushed [][]byte
	tr.Flush(func(p testkit.Packet) { flushed = append(flushed, bytes.Clone(p.Data)) })
	if len(flushed) != 2 || len(tr.Packets()) != 0 {
		t.Fatalf("Flush handed on %d, left %d", len(flushed), len(tr.Packets()))
	}
	payload := make([]byte, 1000)
	if a := testing.AllocsPerRun(100, func() { tr.Multicast(1, payload); tr.Reset() }); a != 0 {
		t.Fatalf("recording after a reset allocates %v times", a)
	}
}

func TestDeliverAndSubscriptions(t *testing.T) {
	var seen []testkit.Packet
	tr := &testkit.Transport{Deliver: func(p testkit.Packet) { seen = append(seen, p) }}
	tr.Send(3, []byte{1})
	if len(seen) != 1 || seen[0].To != 3 || len(tr.Packets()) != 0 {
		t.Fatalf("delivered %+v, recorded %d without Record", seen, len(tr.Packets()))
	}
	_ = tr.Subscribe(4)
	if !tr.Subscribed(4) || tr.Subscribed(5) {
		t.Fatal("subscriptions not tracked")
	}
	_ = tr.Unsubscribe(4)
	if tr.Subscribed(4) {
		t.Fatal("Unsubscribe not tracked")
	}
}

func TestChannelTransport(t *testing.T) {
	tr := &testkit.ChannelTransport{Transport: testkit.Transport{Record: true}}
	region := event.Channel(event.RegionChannel, 3)
	tr.MulticastOn(region, []byte("r"))
	tr.Multicast(7, []byte("g"))
	got := tr.Packets()
	if len(got) != 2 || got[0].Channel != region || got[0].Group != event.NoGroup || string(got[0].Data) != "r" ||
		got[1].Channel != 0 || got[1].Group != 7 || tr.Multicasts != 2 {
		t.Fatalf("recorded %+v, counted %d multicasts", got, tr.Multicasts)
	}
	_ = tr.SubscribeChannel(region)
	if !tr.SubscribedChannel(region) || tr.SubscribedChannel(event.ChannelOf(3)) {
		t.Fatal("channel subscriptions not tracked")
	}
	_ = tr.UnsubscribeChannel(region)
	if tr.SubscribedChannel(region) {
		t.Fatal("UnsubscribeChannel not tracked")
	}
}

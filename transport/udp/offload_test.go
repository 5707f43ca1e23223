package udp

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// offloadBatch writes what the offload tests send, in one batch: 50
// packets of 100 bytes, one of 60 (the last of their run), then 3 of 100
// (a new run: a shorter packet closes one), each numbered.
func offloadBatch(tx *Transport) [][]byte {
	var want [][]byte
	for i := range 54 {
		n := 100
		if i == 50 {
			n = 60
		}
		p := bytes.Repeat([]byte{byte(i)}, n)
		copy(p, fmt.Sprintf("packet %02d", i))
		want = append(want, p)
		tx.Send(2, p)
	}
	return want
}

// expectPackets waits for want, in order, each intact, on got.
func expectPackets(t *testing.T, got chanSink, want [][]byte, what string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for i, w := range want {
		select {
		case p := <-got:
			if !bytes.Equal(p, w) {
				t.Fatalf("%s: packet %d = %q (%d bytes), want %q (%d bytes)", what, i, p[:min(10, len(p))], len(p), w[:10], len(w))
			}
		case <-timeout:
			t.Fatalf("%s: received %d of %d", what, i, len(want))
		}
	}
	select {
	case p := <-got:
		t.Fatalf("%s: an extra packet %q", what, p[:min(10, len(p))])
	case <-time.After(50 * time.Millisecond):
	}
}

// TestOffloadRuns: with offload on (the default), a batch's run of
// equal-sized packets to one address leaves in one sendmmsg entry (UDP
// GSO), closed by a shorter packet; each arrives as the datagram it was,
// in order, whether the receiving socket takes the run whole and cuts it
// (UDP GRO) or the kernel cuts it (NoOffload at the receiver, or a
// MaxPacket under 64 KB, which a whole run could pass). Off at the sender,
// no runs.
func TestOffloadRuns(t *testing.T) {
	for _, c := range []struct {
		name         string
		txOff, rxOff bool
		rxMax        int
		runs         int64
	}{
		{"gso to gro", false, false, 0, 2},
		{"gso to a socket without gro", false, true, 0, 2},
		{"gso to a socket of small MaxPacket", false, false, 2000, 2},
		{"no offload", true, false, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := make(chanSink, 1000)
			rx := open(t, Config{Self: 2, NoOffload: c.rxOff, MaxPacket: c.rxMax}, got)
			tx := toward(t, Config{Self: 1, NoOffload: c.txOff}, nil, 2, rx)
			tx.Flush() // batch from now on, as stack.Node does
			want := offloadBatch(tx)
			tx.Flush()
			st := tx.Stats()
			if st.PacketsSent != 54 || st.BytesSent != 53*100+60 || st.BatchWrites != 1 || st.OffloadRuns != c.runs || st.SendErrors != 0 {
				t.Fatalf("sender: %d packets (%d bytes) in %d sendmmsg, %d runs, %d errors; want 54 (5360) in 1, %d runs, 0 errors",
					st.PacketsSent, st.BytesSent, st.BatchWrites, st.OffloadRuns, st.SendErrors, c.runs)
			}
			expectPackets(t, got, want, "receiver")
			rs := rx.Stats()
			if rs.PacketsReceived != 54 || rs.BytesReceived != 5360 || rs.Truncated != 0 {
				t.Errorf("receiver counted %d packets (%d bytes), %d truncated; want 54 (5360), none", rs.PacketsReceived, rs.BytesReceived, rs.Truncated)
			}
			if wantReads := c.runs > 0 && !c.rxOff && c.rxMax == 0; (rs.OffloadReads > 0) != wantReads {
				t.Errorf("receiver read %d GRO buffers; want some: %v", rs.OffloadReads, wantReads)
			}
		})
	}
}

// TestOffloadRunBounds: a run never takes a packet longer than its own,
// one for another address, or more than gsoMaxSegs packets.
func TestOffloadRunBounds(t *testing.T) {
	got := make(chanSink, 1000)
	rx := open(t, Config{Self: 2}, got)
	tx := toward(t, Config{Self: 1, WriteBatch: 200}, nil, 2, rx)
	if err := tx.SetAddr(3, rx.LocalAddr()); err != nil { // the same socket under another entry: same address, one run
		t.Fatal(err)
	}
	tx.Flush()
	var want [][]byte
	send := func(to event.NodeID, n int) {
		p := bytes.Repeat([]byte{'x'}, n)
		copy(p, fmt.Sprintf("packet %03d", len(want)))
		want = append(want, p)
		tx.Send(to, p)
	}
	send(2, 100)
	send(2, 200) // longer: a new entry
	send(3, 200) // same address by another book entry: joins
	for range gsoMaxSegs {
		send(2, 200) // the run fills at gsoMaxSegs and a new one starts
	}
	tx.Flush()
	st := tx.Stats()
	if st.PacketsSent != int64(len(want)) || st.OffloadRuns != 2 || st.BatchWrites != 1 {
		t.Fatalf("%d packets in %d sendmmsg, %d runs; want %d in 1, 2 runs (100 | 200 x %d | 200 x 2)", st.PacketsSent, st.BatchWrites, st.OffloadRuns, len(want), gsoMaxSegs)
	}
	expectPackets(t, got, want, "receiver")
}

// TestOffloadRefusedFallsBack: where the kernel refuses a GSO run (here a
// socket without UDP checksums, SO_NO_CHECK, which GSO needs), the run's
// packets leave one by one, nothing is lost or counted as an error, and
// later batches send no runs.
func TestOffloadRefusedFallsBack(t *testing.T) {
	got := make(chanSink, 1000)
	rx := open(t, Config{Self: 2}, got)
	tx := toward(t, Config{Self: 1}, nil, 2, rx)
	noChecksums(t, tx)
	tx.Flush()
	for round := range 2 {
		want := offloadBatch(tx)
		tx.Flush()
		st := tx.Stats()
		if st.PacketsSent != int64(54*(round+1)) || st.SendErrors != 0 || st.SendDrops != 0 || st.OffloadRuns != 0 {
			t.Fatalf("round %d: %d packets sent, %d errors, %d drops, %d runs; want %d, 0, 0, 0", round, st.PacketsSent, st.SendErrors, st.SendDrops, st.OffloadRuns, 54*(round+1))
		}
		if tx.gsoMax != 0 {
			t.Fatalf("round %d: offload still on after the kernel refused it", round)
		}
		expectPackets(t, got, want, fmt.Sprintf("round %d", round))
	}
}

// TestOffloadFanoutRuns: a fan-out's copies of a batch of casts form one
// GSO run per node, though written interleaved (node 2, node 3, node 2,
// ...), and each node gets every packet, in order; so it does where the
// kernel refuses the runs (their packets sent one by one).
func TestOffloadFanoutRuns(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("refused=%v", refuse), func(t *testing.T) { fanoutRuns(t, refuse) })
	}
}

func fanoutRuns(t *testing.T, refuse bool) {
	sinks := []chanSink{make(chanSink, 100), make(chanSink, 100), make(chanSink, 100)}
	var trs []*Transport
	for i := range 3 {
		trs = append(trs, open(t, Config{Self: event.NodeID(i + 1), Fanout: true, MulticastPort: 47410}, sinks[i]))
	}
	for j, o := range trs {
		if err := trs[0].SetAddr(event.NodeID(j+1), o.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	tx := trs[0]
	if refuse {
		noChecksums(t, tx)
	}
	tx.Flush()
	var want [][]byte
	for i := range 20 {
		p := bytes.Repeat([]byte{'x'}, 300)
		copy(p, fmt.Sprintf("packet %02d", i))
		want = append(want, p)
		tx.Multicast(5, p)
	}
	tx.Flush()
	runs := int64(2)
	if refuse {
		runs = 0
	}
	if st := tx.Stats(); st.PacketsSent != 40 || st.OffloadRuns != runs || st.SendErrors != 0 || (!refuse && st.BatchWrites != 1) {
		t.Fatalf("%d packets in %d sendmmsg, %d runs, %d errors; want 40, %d runs (one per node), no errors", st.PacketsSent, st.BatchWrites, st.OffloadRuns, st.SendErrors, runs)
	}
	for i := 1; i < 3; i++ {
		expectPackets(t, sinks[i], want, fmt.Sprintf("node %d", i+1))
	}
}

// noChecksums turns UDP checksums off on tx's socket (SO_NO_CHECK), which
// makes the kernel refuse GSO runs.
func noChecksums(t *testing.T, tx *Transport) {
	t.Helper()
	if err := tx.raw.Control(func(fd uintptr) {
		if err := syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_NO_CHECK, 1); err != nil {
			t.Fatal(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

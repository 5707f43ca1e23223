package udp

import (
	"encoding/binary"
	"syscall"
	"testing"
	"time"

	"github.com/layercast/layercast/stack"
)

// gateSink holds the reader in its first Input until the gate opens, so
// the socket's receive queue fills; then it counts packets.
type gateSink struct {
	gate chan struct{}
	got  chan int
}

func (g *gateSink) Input(b *stack.Batch) bool {
	<-g.gate
	g.got <- len(b.Pkts)
	b.Release()
	return true
}

// TestKernelDropsCounted: packets the kernel drops because a receiver's
// socket queue is full are counted (SO_RXQ_OVFL), so every packet sent is
// accounted for: received, dropped by the kernel, or refused at the send.
func TestKernelDropsCounted(t *testing.T) {
	sink := &gateSink{gate: make(chan struct{}), got: make(chan int, 4096)}
	rx := open(t, Config{Self: 2, SocketBuffer: 4096}, sink)
	tx := toward(t, Config{Self: 1}, nil, 2, rx)
	const n = 2000
	pkt := make([]byte, 1000)
	for range n {
		tx.Send(2, pkt)
	}
	close(sink.gate)
	time.Sleep(50 * time.Millisecond) // let the reader empty the queue
	tx.Send(2, pkt)                   // a drop shows with the next packet read
	recv := 0
	for deadline := time.After(5 * time.Second); ; {
		st, sent := rx.Stats(), tx.Stats()
		if int64(recv)+st.KernelDrops+sent.SendDrops >= n+1 {
			break
		}
		select {
		case k := <-sink.got:
			recv += k
		case <-deadline:
			t.Fatalf("received %d, kernel drops %d, send drops %d: %d of %d packets unaccounted for",
				recv, st.KernelDrops, sent.SendDrops, n+1-int64(recv)-st.KernelDrops-sent.SendDrops, n+1)
		}
	}
	st, sent := rx.Stats(), tx.Stats()
	if st.KernelDrops == 0 || int64(recv)+st.KernelDrops+sent.SendDrops != n+1 {
		t.Errorf("received %d + kernel drops %d + send drops %d, want %d with some kernel drops", recv, st.KernelDrops, sent.SendDrops, n+1)
	}
	t.Logf("%d sent: %d received, %d dropped by the kernel, %d refused at the send", n+1, recv, st.KernelDrops, sent.SendDrops)
}

// cmsg builds one control message as the kernel writes it.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, syscall.CmsgSpace(len(data)))
	binary.NativeEndian.PutUint64(b, uint64(syscall.CmsgLen(len(data))))
	binary.NativeEndian.PutUint32(b[8:], uint32(level))
	binary.NativeEndian.PutUint32(b[12:], uint32(typ))
	copy(b[syscall.SizeofCmsghdr:], data)
	return b
}

func TestRxqOverflow(t *testing.T) {
	if syscall.SizeofCmsghdr != 16 {
		t.Skip("the test builds 64-bit control messages")
	}
	ovfl := cmsg(syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, []byte{7, 0, 0, 0})
	other := cmsg(syscall.IPPROTO_IP, 8, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	for _, c := range []struct {
		name string
		oob  []byte
		want uint32
		ok   bool
	}{
		{"alone", ovfl, 7, true},
		{"after another", append(append([]byte{}, other...), ovfl...), 7, true},
		{"absent", other, 0, false},
		{"empty", nil, 0, false},
		{"truncated", ovfl[:10], 0, false},
		{"length past the end", func() []byte { b := append([]byte{}, ovfl...); b[0] = 200; return b }(), 0, false},
	} {
		if v, ok := rxqOverflow(c.oob); v != c.want || ok != c.ok {
			t.Errorf("%s: %d %v, want %d %v", c.name, v, ok, c.want, c.ok)
		}
	}
}

// FuzzRxqOverflow: any control-message bytes give an answer, never a
// panic or a read past the buffer.
func FuzzRxqOverflow(f *testing.F) {
	if syscall.SizeofCmsghdr == 16 {
		f.Add(cmsg(syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, []byte{7, 0, 0, 0}))
		f.Add(cmsg(syscall.IPPROTO_IP, 8, make([]byte, 12)))
	}
	f.Add([]byte{})
	f.Add(make([]byte, 17))
	f.Fuzz(func(t *testing.T, oob []byte) {
		rxqOverflow(oob)
	})
}

package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/layercast/layercast/event"
)

// Capacity is what one node can send and receive. Zero fields mean
// unlimited.
type Capacity struct {
	// SendPPS and SendBps are the NIC's packet and byte rates: a packet
	// takes max(1/SendPPS, size/SendBps) to put on the wire.
	SendPPS, SendBps float64
	// SendQueue bounds the NIC queue (packets); a send that finds it full
	// is dropped. Zero: unbounded (the Pacer still holds sends back).
	SendQueue int
	// HighWater is the NIC queue length at which Writable turns false;
	// the stack is pumped again when the queue is down to half of it.
	// Zero: three quarters of SendQueue, or 64 if SendQueue is zero.
	HighWater int
	// RecvPPS and RecvBps are the rates at which the node takes packets out
	// of its receive buffer: each takes max(1/RecvPPS, size/RecvBps).
	RecvPPS, RecvBps float64
	// RecvBuffer and RecvBufferBytes bound the receive buffer; arrivals
	// that find it full are dropped. Zero: unbounded. The buffer fills
	// when packets come faster than RecvPPS/RecvBps, or while the node is
	// frozen.
	RecvBuffer, RecvBufferBytes int
	// UnicastFirst gives packets sent to the node alone a receive buffer
	// of their own (bounded like the other) that the node empties before
	// it takes the next multicast: a host with a second socket for
	// unicast whose event loop processes all unicast I/O before multicast,
	// as QSM does (QSM 2008, sections 2.1 and 3: one socket for all
	// incoming multicasts and a second for unicast; incoming I/O sorted
	// into priority queues, "first we process all the unicast traffic,
	// which represents the control layer, followed by the multicast").
	// Off, every packet waits in one buffer in arrival order.
	UnicastFirst bool
}

func (c *Capacity) sendLimited() bool { return c.SendPPS > 0 || c.SendBps > 0 }
func (c *Capacity) recvLimited() bool { return c.RecvPPS > 0 || c.RecvBps > 0 }

func serviceTime(pps, bps float64, size int) time.Duration {
	var d time.Duration
	if pps > 0 {
		d = time.Duration(1e9 / pps)
	}
	if bps > 0 {
		if b := time.Duration(float64(size) * 1e9 / bps); b > d {
			d = b
		}
	}
	return d
}

func (c *Capacity) sendTime(size int) time.Duration { return serviceTime(c.SendPPS, c.SendBps, size) }
func (c *Capacity) recvTime(size int) time.Duration { return serviceTime(c.RecvPPS, c.RecvBps, size) }

func (c *Capacity) highWater() int {
	switch {
	case c.HighWater > 0:
		return c.HighWater
	case c.SendQueue > 0:
		return max(1, c.SendQueue*3/4)
	}
	return 64
}

func (c *Capacity) lowWater() int { return c.highWater() / 2 }

// SetCapacity sets one node's capacity (overriding Config.Capacity). Call it
// before traffic flows; packets already queued keep their timing.
func (n *Network) SetCapacity(id event.NodeID, c Capacity) {
	if nd := n.nodes[id]; nd != nil {
		nd.setCap(c)
	}
}

// Capacity is the node's current capacity.
func (nd *Node) Capacity() Capacity { return nd.cap }

// Writable implements stack.Pacer: false while the NIC queue is at or above
// its high-water mark. When it drains to half of that, the network calls the
// stack's Pump.
func (nd *Node) Writable() bool {
	if nd.down {
		return true // sends are discarded anyway; do not stall the stack
	}
	if !nd.sendLim {
		return true
	}
	if nd.blocked || nd.tx.len() >= nd.cap.highWater() {
		nd.blocked = true
		return false
	}
	return true
}

// NodeStats counts what one node's attachment did.
type NodeStats struct {
	// PacketsSent and BytesSent count what the stack sent (a multicast
	// once).
	PacketsSent, BytesSent int64
	// PacketsReceived and BytesReceived count what reached the stack.
	PacketsReceived, BytesReceived int64
	// LossDrops is packets to this node lost by the loss model.
	LossDrops int64
	// OverflowDrops is arrivals that found the receive buffer full.
	OverflowDrops int64
	// SendQueueDrops is sends refused by the full NIC queue.
	SendQueueDrops int64
	// PeakRecvPackets and PeakRecvBytes are the receive buffer's highest
	// occupancy (including the packet being taken out); PeakSendQueue the
	// NIC queue's, in packets. Both stay zero on a node without capacity
	// limits that is never frozen: its packets never wait.
	PeakRecvPackets, PeakRecvBytes, PeakSendQueue int
}

// NodeStats returns one node's counters (zero for an unknown node).
func (n *Network) NodeStats(id event.NodeID) NodeStats {
	if nd := n.nodes[id]; nd != nil {
		return nd.stats
	}
	return NodeStats{}
}

// Stats returns the node's counters.
func (nd *Node) Stats() NodeStats { return nd.stats }

// ring is a growable FIFO queue.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (r *ring[T]) len() int { return r.n }

func (r *ring[T]) push(v T) {
	if r.n == len(r.buf) {
		nb := make([]T, max(16, 2*len(r.buf)))
		for i := 0; i < r.n; i++ {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = v
	r.n++
}

func (r *ring[T]) peek() (T, bool) {
	var zero T
	if r.n == 0 {
		return zero, false
	}
	return r.buf[r.head], true
}

func (r *ring[T]) pop() (T, bool) {
	var zero T
	if r.n == 0 {
		return zero, false
	}
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return v, true
}

// pktBuf is a pooled packet copy shared by every receiver of a multicast.
type pktBuf struct {
	b     []byte
	refs  int32
	class int8
}

// bufPool keeps free packet buffers by size class (64 B to 64 KiB, powers
// of two); bigger packets are allocated and left to the GC.
type bufPool struct {
	free [11][]*pktBuf
}

func sizeClass(n int) int {
	c := 0
	for s := 64; s < n; s <<= 1 {
		c++
	}
	return c
}

// get returns a buffer holding a copy of p, with one reference.
func (p *bufPool) get(src []byte) *pktBuf {
	c := sizeClass(len(src))
	var pb *pktBuf
	if c < len(p.free) {
		if f := p.free[c]; len(f) > 0 {
			pb = f[len(f)-1]
			p.free[c] = f[:len(f)-1]
		} else {
			pb = &pktBuf{b: make([]byte, 0, 64<<c), class: int8(c)}
		}
	} else {
		pb = &pktBuf{class: -1}
	}
	pb.b = append(pb.b[:0], src...)
	pb.refs = 1
	return pb
}

// put drops one reference and frees the buffer with the last.
func (p *bufPool) put(pb *pktBuf) {
	pb.refs--
	if pb.refs > 0 || pb.class < 0 {
		return
	}
	p.free[pb.class] = append(p.free[pb.class], pb)
}

// ParseCapacity parses a capacity written as comma-separated key=value
// pairs, for scenario files and flags:
//
//	send_pps=20000, send_bps=125MB, send_queue=512, high_water=256,
//	recv_pps=10000, recv_bps=50MB, recv_buffer=1000, recv_buffer_bytes=2MiB,
//	unicast_first=on
//
// Rates in bytes per second and buffer bytes take the units B, KB, MB, GB,
// KiB, MiB, GiB. Keys left out stay unlimited; "unlimited" alone is the zero
// Capacity.
func ParseCapacity(text string) (Capacity, error) {
	var c Capacity
	s := strings.TrimSpace(text)
	if s == "unlimited" {
		return c, nil
	}
	if s == "" {
		return c, fmt.Errorf("empty capacity; use unlimited or key=value pairs such as recv_pps=1000,recv_buffer=100")
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || v == "" {
			return Capacity{}, fmt.Errorf("capacity %q: %q is not key=value", s, strings.TrimSpace(kv))
		}
		var err error
		switch k {
		case "send_pps":
			c.SendPPS, err = parseCount(v)
		case "recv_pps":
			c.RecvPPS, err = parseCount(v)
		case "send_bps":
			c.SendBps, err = parseBytes(v)
		case "recv_bps":
			c.RecvBps, err = parseBytes(v)
		case "send_queue", "high_water", "recv_buffer":
			var f float64
			f, err = parseCount(v)
			n := int(f)
			if err == nil && float64(n) != f {
				err = fmt.Errorf("%q is not a whole number of packets", v)
			}
			switch k {
			case "send_queue":
				c.SendQueue = n
			case "high_water":
				c.HighWater = n
			default:
				c.RecvBuffer = n
			}
		case "unicast_first":
			switch v {
			case "on", "true", "1":
				c.UnicastFirst = true
			case "off", "false", "0":
				c.UnicastFirst = false
			default:
				err = fmt.Errorf("%q is not on or off", v)
			}
		case "recv_buffer_bytes":
			var f float64
			f, err = parseBytes(v)
			c.RecvBufferBytes = int(f)
		default:
			return Capacity{}, fmt.Errorf("capacity %q: unknown key %q; use send_pps, send_bps, send_queue, high_water, recv_pps, recv_bps, recv_buffer, recv_buffer_bytes or unicast_first", s, k)
		}
		if err != nil {
			return Capacity{}, fmt.Errorf("capacity %q: %s: %v", s, k, err)
		}
	}
	return c, nil
}

func parseCount(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0) || math.IsInf(f, 0) || f > 1e12 {
		return 0, fmt.Errorf("%q is not a number between 0 and 1e12", v)
	}
	return f, nil
}

func parseBytes(v string) (float64, error) {
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.') {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a size such as 1500, 50KB or 1MiB", v)
	}
	mult := map[string]float64{"": 1, "B": 1, "KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}
	m, ok := mult[strings.TrimSpace(v[i:])]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q in %q; use B, KB, MB, GB, KiB, MiB or GiB", strings.TrimSpace(v[i:]), v)
	}
	f, err := parseCount(v[:i])
	if err != nil {
		return 0, fmt.Errorf("%q is not a size such as 1500, 50KB or 1MiB", v)
	}
	return f * m, nil
}

// Package udp is the real network: stack.Transport over UDP unicast and IP
// multicast through golang.org/x/net/ipv4.
//
// Each node has one unicast socket, bound to its entry in the address book
// (NodeID -> UDP address), which it also sends multicasts from. Each
// subscribed multicast channel (a group's, a QSM region's, a Spread site's:
// event.ChannelID) has its own socket bound to the channel's multicast
// address and port and joined on the configured interface. ChannelAddr is
// the one channel-to-address map of every command: 239.0.0.0/8,
// administratively scoped, derived from the channel's id, on the port
// Config.MulticastPort plus the channel's kind (GroupAddr is its group
// case). The multicast interface is always set
// explicitly (default "lo"), TTL is 1 and loopback is on so several
// processes on one host hear each other.
//
// The address book holds entries given by the caller (Config.Book, SetAddr:
// pinned, never changed by traffic) and, when Config.Learn is set, entries
// learned from incoming packets: the frame's source node and the packet's
// source address (every node sends from its unicast socket, multicasts
// included). That is how a membership service replies to nodes nobody told
// it about, and how nodes find each other for NAKs and repairs. Learned
// entries are bounded by Config.Learn; the oldest is forgotten first (a live
// node is learned again from its next packet).
//
// Reader goroutines read with recvmmsg into buffers owned by the transport
// and hand each batch to the Node runner (stack.Node.Input); the node gives
// the batch back when the stack has consumed it, so steady state allocates
// nothing per packet. Where every layer of the stack is a
// stack.CompactHolder (fifo, reliable, pack, mflow), the messages made of
// a batch share its buffers instead of copying them, and the batch comes
// back once the last of them is released. What a layer holds (fifo
// behind a gap) stays in the batch too. A socket's buffers are chunks of
// MaxPacket bytes, and a batch keeps only the chunks its read filled, so
// held messages keep about the memory they came in; they keep batches
// while a read's worth of chunks (BatchSize) stays free (event.Pins):
// past that, held messages are copied into buffers of their own size, and
// the reader always finds room to read the repair that fills the gap
// into. Sends are non-blocking system calls straight from the
// stack's goroutine: a full kernel buffer drops the packet and counts it
// (the network is lossy; the reliable layers recover). Once a runner calls
// Flush (stack.Node does after every step), sends are copied into a batch
// and leave together, one sendmmsg per step (or per Config.WriteBatch
// packets); before that, each leaves at once. Packets of 8 KB or more
// (packs) always leave at once, uncopied.
//
// On Linux the batch also uses UDP segmentation offload: a batch's
// packets of one size to one address (a sender's casts, or a fan-out's
// copies to one node) leave as one buffer the kernel cuts into the same
// datagrams (UDP_SEGMENT), each address's in the order written, and every
// socket asks for receive offload (UDP_GRO), so such a run sent on this
// host arrives as one buffer the reader cuts. The kernel then walks its
// send and delivery path once per run instead of once per packet: on
// loopback multicast to 3 receiver processes, 1,000-byte casts took 7.9
// against 1.0 us of the sender's CPU each (fan-out: 15.4 against 1.4).
// Config.NoOffload turns it off;
// a kernel that refuses a run gets its packets one by one, and no runs
// after that.
package udp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/ring"
	"github.com/layercast/layercast/stack"
)

// Config configures a Transport.
type Config struct {
	// Self is this node.
	Self event.NodeID
	// Listen is the unicast address to bind (default: Self's address book
	// entry, or 127.0.0.1:0 if it has none).
	Listen string
	// Book maps nodes to their unicast addresses. It may also be set or
	// extended later with SetAddr.
	Book map[event.NodeID]*net.UDPAddr
	// Interface is the multicast interface (default "lo").
	Interface string
	// MulticastPort is the UDP port of every group's channel (default
	// 47000); other kinds of channel use the next ports (ChannelAddr).
	MulticastPort int
	// SocketBuffer is the SO_RCVBUF/SO_SNDBUF size to ask for (default 8 MB;
	// forced past net.core.rmem_max where the process may, as root).
	SocketBuffer int
	// WriteBatch is the most packets one sendmmsg carries (default 64;
	// 1: every packet is its own sendto, Flush or not). The batch's bytes
	// are bounded too, by WriteBytes.
	WriteBatch int
	// WriteBytes bounds the bytes waiting in the send batch (default 1 MB,
	// at least MaxPacket); a packet that does not fit flushes the batch.
	WriteBytes int
	// BatchSize is the packets one ReadBatch reads at most (default 64).
	BatchSize int
	// Batches sets a socket's read memory (default 4): Batches*BatchSize
	// chunks of MaxPacket bytes, one per datagram (or GRO buffer) read.
	// A read takes up to BatchSize free chunks and its batch keeps those
	// it filled until the node gives it back; the reader waits while none
	// is free. Messages the stack holds keep batches while BatchSize
	// chunks stay free (see the package doc and reader): at 1% loss with
	// 1 KB casts fifo holds almost every message for a repair's round
	// trip, in tens of batches of a few chunks each.
	Batches int
	// MaxPacket is the largest datagram accepted (default 65536); longer
	// ones are counted as truncated and dropped.
	MaxPacket int
	// Learn bounds the addresses learned from incoming frames (0: learn
	// none; only Book and SetAddr entries are used).
	Learn int
	// Fanout carries every multicast channel by unicast, one copy to each
	// node in the address book, for networks without IP multicast (most
	// clouds): subscribing opens no socket, and packets of every channel
	// arrive on the unicast socket. The layers see no difference.
	Fanout bool
	// NoOffload turns off UDP segmentation offload (GSO) on sends and
	// receive offload (GRO) on reads (reads take no GRO with a MaxPacket
	// under 64 KB either). With them on (Linux), a run of
	// equal-sized packets to one address in the send batch leaves as one
	// buffer the kernel cuts into datagrams (UDP_SEGMENT), and a socket
	// takes such a run as one buffer and cuts it here (UDP_GRO): the
	// datagrams on the network are the same, the kernel's work per packet
	// is done once per run. Off, or where the kernel refuses, every packet
	// is its own datagram through the whole kernel path.
	NoOffload bool
}

// DefaultMulticastPort is the UDP port of every group's channel unless
// Config.MulticastPort says otherwise.
const DefaultMulticastPort = 47000

// Stats counts what the transport did.
type Stats struct {
	PacketsSent, BytesSent int64
	// SendDrops counts packets dropped because the kernel buffer was full.
	SendDrops int64
	// SendErrors counts other send failures (including unknown nodes).
	SendErrors                     int64
	PacketsReceived, BytesReceived int64
	// Truncated counts datagrams longer than MaxPacket (and datagrams of a
	// GRO buffer beyond what a read batch holds, which Linux never sends).
	Truncated int64
	// BatchReads counts recvmmsg calls that returned packets.
	BatchReads int64
	// BatchWrites counts sendmmsg calls that sent packets.
	BatchWrites int64
	// OffloadRuns counts sends of several packets as one buffer (UDP GSO);
	// OffloadReads counts buffers read holding several datagrams (UDP GRO).
	OffloadRuns, OffloadReads int64
	// KernelDrops counts packets the kernel dropped because a socket's
	// receive queue was full (SO_RXQ_OVFL; a drop shows once a later
	// packet arrives on the same socket). The kernel counts what it
	// queues: a GSO run it would have handed a GRO socket whole is
	// dropped whole, and may count once.
	KernelDrops int64
	// Polls counts reads the node goroutine made itself (Poll) that found
	// packets.
	Polls int64
	// HeldCopies counts received messages a layer held that were copied
	// out of the read buffers because held messages kept all of them they
	// may (event.Pins: a read's worth must stay free); the rest were held
	// in place.
	HeldCopies int64
	// Learned counts addresses learned or changed from incoming frames;
	// Forgotten counts learned addresses dropped to keep within
	// Config.Learn.
	Learned, Forgotten int64
}

// Sink receives packet batches from the reader goroutines; stack.Node
// implements it. Input returns false once the sink is closed.
type Sink interface {
	Input(b *stack.Batch) bool
}

// Filter is implemented by sinks that change batches before the node sees
// them (experiment/udprun's loss model): Poll, which hands what it reads
// to the node directly, filters through it too.
type Filter interface {
	Filter(b *stack.Batch)
}

// Transport is one node's UDP network.
type Transport struct {
	cfg  Config
	ifi  *net.Interface
	sink Sink

	uc  *net.UDPConn
	pc  *ipv4.PacketConn
	raw syscall.RawConn
	// The pending send (see write).
	writeFn func(uintptr) bool
	wpkt    []byte
	wsa     *syscall.SockaddrInet4
	werr    error
	// The send batch (see Flush): packets copied into wslab, wn of them
	// described by wm; only the stack's goroutine touches it.
	batching  bool // a runner calls Flush
	wm        *mmsg
	wslab     []byte
	wn, wused int
	wsent     int
	wpn       int // packets in the batch (wn entries: GSO runs carry several)
	// Per batch entry: how many packets it carries (more than one: a UDP
	// GSO run of equal-sized packets, one iovec each), their bytes, where
	// to, the run's packet size and whether a shorter packet closed it.
	wsegs   []int
	wlen    []int
	wsas    []*syscall.SockaddrInet4
	wseg    []int
	wclosed []bool
	wctl    []byte // per entry gsoCtlSize bytes: its UDP_SEGMENT control message
	// gsoMax is the largest packet a run takes (0: offload off).
	gsoMax       int
	werrno       syscall.Errno
	flushFn      func(uintptr) bool
	wpkts, wbyts int64       // counted by flushFn, added to the atomics once
	full         atomic.Bool // a send was refused lately (see Writable)
	resume       *time.Timer
	alarm        *alarm   // see WakeIn; nil until first used
	chans        sync.Map // event.ChannelID -> *syscall.SockaddrInet4 (see ChannelAddr)

	// The address book: read for every send and, when learning, for every
	// packet received; written rarely. Entries are never changed in place.
	bookMu  sync.RWMutex
	book    map[event.NodeID]*bookEntry
	learned ring.Ring[event.NodeID] // learned ids, oldest first

	mu     sync.Mutex
	groups map[event.ChannelID]*groupSock // subscribed channels
	closed bool
	// closing is closed by Close: a reader waiting for a batch the node
	// will never give back (a closed Node drops what its inbox held)
	// stops waiting.
	closing chan struct{}
	wg      sync.WaitGroup

	packetsSent, bytesSent, sendDrops, sendErrors atomic.Int64
	packetsRecv, bytesRecv, truncated, batches    atomic.Int64
	batchWrites, offloadRuns, offloadReads        atomic.Int64
	learnedN, forgotten, kernelDrops              atomic.Int64
	polls                                         atomic.Int64
	readers                                       []*reader // guarded by mu; see Poll
	closedCopies                                  int64     // guarded by mu: held copies of dropped readers
}

// bookEntry is one node's unicast address.
type bookEntry struct {
	sa     syscall.SockaddrInet4
	pinned bool // given by the caller: traffic never changes it
}

type groupSock struct {
	conn *net.UDPConn
	pc   *ipv4.PacketConn
}

// GroupAddr is group g's multicast channel (ChannelAddr of
// event.ChannelOf(g)): 239.x.y.z with x.y.z the GroupID folded to 24 bits
// (never 239.0.0.0), at the given port.
func GroupAddr(g event.GroupID, port int) *net.UDPAddr {
	a, _ := ChannelAddr(event.ChannelOf(g), port) // a group channel always maps
	return a
}

// ChannelAddr maps a multicast channel to its address: 239.x.y.z with x.y.z
// the channel's id folded to 24 bits (never 239.0.0.0), at port base plus
// the channel's kind, so channels of different kinds never share a socket
// even where their ids fold alike. It is the one channel-to-address map of
// every command that touches the real network.
func ChannelAddr(ch event.ChannelID, base int) (*net.UDPAddr, error) {
	if !ch.Valid() {
		return nil, fmt.Errorf("udp: %v is not a channel", ch)
	}
	port := base + int(ch.Kind())
	if base <= 0 || port > 65535 {
		return nil, fmt.Errorf("udp: channel %v: port %d+%d out of range 1-65535", ch, base, ch.Kind())
	}
	v := ch.ID()
	v = (v ^ v>>24) & 0xffffff
	if v == 0 {
		v = 1
	}
	return &net.UDPAddr{IP: net.IPv4(239, byte(v>>16), byte(v>>8), byte(v)), Port: port}, nil
}

// New opens the unicast socket and starts its reader. Packets go to sink,
// which may be set later with SetSink; packets read while there is none are
// dropped.
func New(cfg Config, sink Sink) (*Transport, error) {
	if cfg.Self == event.NoNode {
		return nil, errors.New("udp: Config.Self must be a non-zero node id")
	}
	if cfg.Interface == "" {
		cfg.Interface = "lo"
	}
	if cfg.MulticastPort == 0 {
		cfg.MulticastPort = DefaultMulticastPort
	}
	if top := 65535 - int(event.NumChannelKinds-1); cfg.MulticastPort < 0 || cfg.MulticastPort > top {
		return nil, fmt.Errorf("udp: multicast port %d out of range 1-%d (each kind of channel takes the next port)", cfg.MulticastPort, top)
	}
	if cfg.Learn < 0 {
		return nil, fmt.Errorf("udp: Config.Learn %d is negative", cfg.Learn)
	}
	if cfg.SocketBuffer <= 0 {
		cfg.SocketBuffer = 8 << 20
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 64
	}
	if cfg.Batches <= 0 {
		cfg.Batches = 4
	}
	if cfg.MaxPacket <= 0 {
		cfg.MaxPacket = 65536
	}
	if cfg.WriteBatch <= 0 {
		cfg.WriteBatch = 64
	}
	if cfg.WriteBytes <= 0 {
		cfg.WriteBytes = 1 << 20
	}
	cfg.WriteBytes = max(cfg.WriteBytes, cfg.MaxPacket)
	ifi, err := net.InterfaceByName(cfg.Interface)
	if err != nil {
		return nil, fmt.Errorf("udp: multicast interface %q: %v", cfg.Interface, err)
	}
	listen := cfg.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
		if a := cfg.Book[cfg.Self]; a != nil {
			listen = a.String()
		}
	}
	la, err := net.ResolveUDPAddr("udp4", listen)
	if err != nil {
		return nil, fmt.Errorf("udp: listen address %q: %v", listen, err)
	}
	uc, err := net.ListenUDP("udp4", la)
	if err != nil {
		return nil, fmt.Errorf("udp: node %v: %v", cfg.Self, err)
	}
	t := &Transport{cfg: cfg, ifi: ifi, sink: sink, uc: uc, groups: map[event.ChannelID]*groupSock{},
		book: map[event.NodeID]*bookEntry{}, closing: make(chan struct{})}
	t.pc = ipv4.NewPacketConn(uc)
	setBuffers(uc, cfg.SocketBuffer, t.gro())
	if err := t.pc.SetMulticastInterface(ifi); err != nil {
		uc.Close()
		return nil, fmt.Errorf("udp: set multicast interface %s: %v", ifi.Name, err)
	}
	if err := t.pc.SetMulticastTTL(1); err != nil {
		uc.Close()
		return nil, fmt.Errorf("udp: multicast TTL: %v", err)
	}
	if err := t.pc.SetMulticastLoopback(true); err != nil {
		uc.Close()
		return nil, fmt.Errorf("udp: multicast loopback: %v", err)
	}
	t.writeFn = t.sendto
	t.flushFn = t.sendmmsg
	t.wm = newMmsg(cfg.WriteBatch, min(cfg.WriteBatch, gsoMaxSegs))
	t.wslab = make([]byte, cfg.WriteBytes)
	t.wsegs = make([]int, cfg.WriteBatch)
	t.wlen = make([]int, cfg.WriteBatch)
	t.wsas = make([]*syscall.SockaddrInet4, cfg.WriteBatch)
	t.wseg = make([]int, cfg.WriteBatch)
	t.wclosed = make([]bool, cfg.WriteBatch)
	t.wctl = make([]byte, cfg.WriteBatch*gsoCtlSize)
	if !cfg.NoOffload {
		// A run's packets must each fit the path's MTU (the kernel refuses
		// a run whose segments do not fit the device's); sends beyond the
		// multicast interface may cross a standard Ethernet.
		t.gsoMax = min(ifi.MTU, 1500) - 28 // IPv4 and UDP headers
	}
	if t.raw, err = uc.SyscallConn(); err != nil {
		uc.Close()
		return nil, err
	}
	for id, a := range cfg.Book {
		if err := t.SetAddr(id, a); err != nil {
			uc.Close()
			return nil, err
		}
	}
	t.wg.Add(1)
	go t.read(t.raw)
	return t, nil
}

// gro says whether the sockets take GSO runs whole (UDP_GRO): with
// offload on and read buffers of 64 KB, which any run fits (a smaller
// MaxPacket would truncate runs whose datagrams each fit).
func (t *Transport) gro() bool { return !t.cfg.NoOffload && t.cfg.MaxPacket >= 65536 }

// setBuffers asks for large socket buffers: forced past net.core.rmem_max
// and wmem_max where the process may (CAP_NET_ADMIN), else as much as the
// kernel grants, which only means more drops under load.
func setBuffers(c *net.UDPConn, n int, gro bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		if syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, n) != nil {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
		}
		if syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUFFORCE, n) != nil {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, n)
		}
		// Ask for the socket's drop counter with every packet (rxqOverflow).
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, 1)
		if gro {
			// Take a GSO run sent on this host as one buffer (read cuts
			// it); a kernel without UDP_GRO cuts it itself.
			_ = syscall.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1)
		}
	})
}

// oobSize is the control-message space one packet needs: its
// SO_RXQ_OVFL counter and its UDP_GRO segment size (an int each).
var oobSize = 2 * syscall.CmsgSpace(4)

// groMaxSegs is the most datagrams one UDP_GRO buffer holds (the kernel's
// UDP_MAX_SEGMENTS, 128 since Linux 5.x; 64 before).
const groMaxSegs = 128

// rxqOverflow finds the SO_RXQ_OVFL control message in oob (a packet's
// control messages as recvmmsg wrote them) and returns the socket's drop
// counter.
func rxqOverflow(oob []byte) (uint32, bool) {
	v, ok, _ := controls(oob)
	return v, ok
}

// controls reads a packet's control messages as recvmmsg wrote them: the
// socket's drop counter (SO_RXQ_OVFL) if there is one, and the segment
// size of a UDP_GRO buffer (0 if none: one datagram). It reads the
// headers by hand, allocating nothing; the first message of each kind
// counts.
func controls(oob []byte) (drops uint32, haveDrops bool, seg int) {
	haveSeg := false
	hs := syscall.SizeofCmsghdr
	for len(oob) >= hs {
		var n int
		var level, typ int32
		if hs == 16 { // 64-bit: Len is 8 bytes
			n = int(min(binary.NativeEndian.Uint64(oob), uint64(len(oob))+1))
			level, typ = int32(binary.NativeEndian.Uint32(oob[8:])), int32(binary.NativeEndian.Uint32(oob[12:]))
		} else {
			n = int(binary.NativeEndian.Uint32(oob))
			level, typ = int32(binary.NativeEndian.Uint32(oob[4:])), int32(binary.NativeEndian.Uint32(oob[8:]))
		}
		if n < hs || n > len(oob) {
			return
		}
		switch {
		case level == syscall.SOL_SOCKET && typ == syscall.SO_RXQ_OVFL && n >= hs+4 && !haveDrops:
			drops, haveDrops = binary.NativeEndian.Uint32(oob[hs:]), true
		case level == unix.SOL_UDP && typ == unix.UDP_GRO && n >= hs+4 && !haveSeg:
			seg, haveSeg = int(int32(binary.NativeEndian.Uint32(oob[hs:]))), true
		}
		// The next header starts at the aligned end of this one.
		step := syscall.CmsgSpace(n - hs)
		if step > len(oob) {
			return
		}
		oob = oob[step:]
	}
	return
}

// LocalAddr is the unicast address the node listens on.
func (t *Transport) LocalAddr() *net.UDPAddr { return t.uc.LocalAddr().(*net.UDPAddr) }

// SetAddr adds or changes a node's unicast address in the address book.
// The entry is pinned: packets from elsewhere claiming to be id never
// change it.
func (t *Transport) SetAddr(id event.NodeID, a *net.UDPAddr) error {
	ip4 := a.IP.To4()
	if ip4 == nil {
		return fmt.Errorf("udp: address of node %v: %v is not IPv4", id, a)
	}
	e := &bookEntry{sa: syscall.SockaddrInet4{Port: a.Port}, pinned: true}
	copy(e.sa.Addr[:], ip4)
	t.bookMu.Lock()
	t.book[id] = e
	t.bookMu.Unlock()
	return nil
}

// Addr returns a node's unicast address from the address book, or nil.
func (t *Transport) Addr(id event.NodeID) *net.UDPAddr {
	t.bookMu.RLock()
	e := t.book[id]
	t.bookMu.RUnlock()
	if e == nil {
		return nil
	}
	return &net.UDPAddr{IP: net.IPv4(e.sa.Addr[0], e.sa.Addr[1], e.sa.Addr[2], e.sa.Addr[3]), Port: e.sa.Port}
}

// observe learns the address of a packet's source node from its frame;
// packets without a valid frame teach nothing (the stack counts them).
func (t *Transport) observe(pkt []byte, ip [4]byte, port int) {
	if f, err := stack.ParseFrame(pkt); err == nil {
		t.learn(f.Src, ip, port)
	}
}

// learn records that node src sent from address ip:port (Config.Learn >
// 0). The common case, a known node at its known address, takes a read
// lock and allocates nothing.
func (t *Transport) learn(src event.NodeID, ip [4]byte, port int) {
	if src == t.cfg.Self {
		return
	}
	t.bookMu.RLock()
	e := t.book[src]
	t.bookMu.RUnlock()
	if e != nil && (e.pinned || e.sa.Port == port && ip == e.sa.Addr) {
		return
	}
	t.bookMu.Lock()
	defer t.bookMu.Unlock()
	old := t.book[src]
	if old != nil && old.pinned {
		return
	}
	if old == nil {
		// A new id takes a slot of the ring; a full ring forgets its
		// oldest (a slot whose id was pinned since frees nothing).
		if t.learned.Len() > 0 && t.learned.Len() >= t.cfg.Learn {
			gone := t.learned.Pop()
			if g := t.book[gone]; g != nil && !g.pinned {
				delete(t.book, gone)
				t.forgotten.Add(1)
			}
		}
		t.learned.Push(src)
	}
	t.book[src] = &bookEntry{sa: syscall.SockaddrInet4{Port: port, Addr: ip}}
	t.learnedN.Add(1)
}

// SetSink sets where packets go (if New was given nil).
func (t *Transport) SetSink(s Sink) {
	t.mu.Lock()
	t.sink = s
	t.mu.Unlock()
}

// Send transmits pkt to node to, without blocking.
func (t *Transport) Send(to event.NodeID, pkt []byte) {
	t.bookMu.RLock()
	e := t.book[to]
	t.bookMu.RUnlock()
	if e == nil {
		t.sendErrors.Add(1)
		return
	}
	t.write(pkt, &e.sa)
}

// Multicast transmits pkt on group g's channel, without blocking.
func (t *Transport) Multicast(g event.GroupID, pkt []byte) {
	t.MulticastOn(event.ChannelOf(g), pkt)
}

// MulticastOn transmits pkt on channel ch, without blocking (stack.Channels).
// A channel with no address (a bad id) counts as a send error.
func (t *Transport) MulticastOn(ch event.ChannelID, pkt []byte) {
	if t.cfg.Fanout {
		t.fanout(pkt)
		return
	}
	v, ok := t.chans.Load(ch)
	if !ok {
		a, err := ChannelAddr(ch, t.cfg.MulticastPort)
		if err != nil {
			t.sendErrors.Add(1)
			return
		}
		sa := &syscall.SockaddrInet4{Port: a.Port}
		copy(sa.Addr[:], a.IP.To4())
		v, _ = t.chans.LoadOrStore(ch, sa)
	}
	t.write(pkt, v.(*syscall.SockaddrInet4))
}

// fanout sends pkt to every node in the address book but this one (a
// multicast without IP multicast). The book's read lock is held across
// the sends: they only copy into the batch or make a system call.
func (t *Transport) fanout(pkt []byte) {
	t.bookMu.RLock()
	defer t.bookMu.RUnlock()
	for id, e := range t.book {
		if id != t.cfg.Self {
			t.write(pkt, &e.sa)
		}
	}
}

// write queues pkt for sa in the send batch once a runner calls Flush,
// and sends it at once before that. A packet of directBytes or more is
// sent at once after what the batch holds: copying it into the batch
// costs more than the system call the batch would save.
func (t *Transport) write(pkt []byte, sa *syscall.SockaddrInet4) {
	if !t.batching || len(pkt) >= directBytes {
		if t.wn > 0 {
			t.Flush() // keep the order packets were written in
		}
		t.sendNow(pkt, sa)
		return
	}
	if t.wpn == t.cfg.WriteBatch || t.wused+len(pkt) > len(t.wslab) {
		t.Flush()
	}
	b := t.wslab[t.wused : t.wused+len(pkt)]
	copy(b, pkt) // pkt is the stack's only during the call
	t.wused += len(pkt)
	t.wpn++
	if i := t.runFor(len(pkt), sa); i >= 0 {
		t.joinRun(i, b)
		return
	}
	t.wm.set(t.wn, b)
	t.wm.setAddr(t.wn, sa)
	t.wm.setOOB(t.wn, nil)
	t.wsegs[t.wn], t.wlen[t.wn], t.wsas[t.wn] = 1, len(pkt), sa
	t.wseg[t.wn], t.wclosed[t.wn] = len(pkt), false
	t.wn++
}

// runFor is the batch entry a packet of n bytes for sa may join as one
// more segment of its GSO run, or -1: the latest entry for sa's address
// (so each address's packets leave in the order written; a fan-out's
// copies to several nodes interleave), if its run is not closed by a
// shorter packet, its packets are no shorter than n, and it is within
// the kernel's bounds.
func (t *Transport) runFor(n int, sa *syscall.SockaddrInet4) int {
	if t.gsoMax == 0 {
		return -1
	}
	for i := t.wn - 1; i >= 0; i-- {
		if last := t.wsas[i]; last != sa && (last.Port != sa.Port || last.Addr != sa.Addr) {
			continue
		}
		if t.wclosed[i] || n > t.wseg[i] || t.wseg[i] > t.gsoMax || t.wsegs[i] >= t.wm.k || t.wlen[i]+n > gsoMaxBytes {
			return -1
		}
		return i
	}
	return -1
}

// joinRun makes packet b (copied into wslab) one more segment of entry
// i's run (runFor chose it).
func (t *Transport) joinRun(i int, b []byte) {
	if t.wsegs[i] == 1 {
		ctl := t.wctl[i*gsoCtlSize : (i+1)*gsoCtlSize]
		putSegmentCtl(ctl, t.wseg[i])
		t.wm.setOOB(i, ctl)
	}
	t.wm.add(i, b)
	t.wsegs[i]++
	t.wlen[i] += len(b)
	t.wclosed[i] = len(b) < t.wseg[i]
}

// The bounds of a GSO run: the kernel takes at most 64 segments (128 in
// newer kernels) and one IPv4 datagram's worth of bytes.
const (
	gsoMaxSegs  = 64
	gsoMaxBytes = 65000
)

// gsoCtlSize is the room of one UDP_SEGMENT control message.
var gsoCtlSize = syscall.CmsgSpace(2)

// putSegmentCtl writes a UDP_SEGMENT control message giving segment size
// seg into ctl (gsoCtlSize bytes).
func putSegmentCtl(ctl []byte, seg int) {
	clear(ctl)
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&ctl[0]))
	h.Level = unix.SOL_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(syscall.CmsgLen(2))
	binary.NativeEndian.PutUint16(ctl[syscall.CmsgLen(0):], uint16(seg))
}

// segs is the number of packets in batch entries [from, wn).
func (t *Transport) segs(from int) int64 {
	var n int64
	for i := from; i < t.wn; i++ {
		n += int64(t.wsegs[i])
	}
	return n
}

// directBytes is the size from which write sends a packet at once
// instead of copying it into the send batch (a pack of messages; 60 KB
// copied cost about 5us, a sendto about 2us).
const directBytes = 8 << 10

// Flush sends the batch: one sendmmsg for every packet written since the
// last Flush (more calls only where the kernel takes part of it). The
// stack's goroutine calls it, after every step (stack.Node, which sees the
// transport implements stack.Flusher); from the first call on, writes wait
// for it. A full kernel buffer drops the rest of the batch, counted as
// send drops, and pauses the transport (Writable).
func (t *Transport) Flush() {
	t.batching = true
	if t.wn == 0 {
		return
	}
	t.wsent, t.wpkts, t.wbyts = 0, 0, 0
	for t.wsent < t.wn {
		t.werrno = 0
		if err := t.raw.Write(t.flushFn); err != nil {
			t.sendErrors.Add(t.segs(t.wsent)) // closed
			break
		}
		switch e := t.werrno; {
		case e == 0:
		case e == syscall.EAGAIN || e == syscall.ENOBUFS:
			t.sendDrops.Add(t.segs(t.wsent))
			t.wsent = t.wn
			t.pause()
		default:
			// This one entry (an unreachable address, too long).
			t.sendErrors.Add(int64(t.wsegs[t.wsent]))
			t.wsent++
		}
	}
	t.packetsSent.Add(t.wpkts)
	t.bytesSent.Add(t.wbyts)
	t.wn, t.wused, t.wpn = 0, 0, 0
}

// sendmmsg is Flush's RawConn callback: it sends from wsent on until all
// are sent or one fails (werrno), reporting done at once either way so a
// full buffer never parks the stack's goroutine.
func (t *Transport) sendmmsg(fd uintptr) bool {
	for t.wsent < t.wn {
		n, e := t.wm.send(fd, t.wsent, t.wn)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 && e != syscall.EAGAIN && e != syscall.ENOBUFS && t.wsegs[t.wsent] > 1 {
			// The kernel or the device refuses GSO here: send this
			// run's packets one by one, and no runs from now on.
			t.gsoMax = 0
			t.sendApart(fd, t.wsent)
			t.wsent++
			continue
		}
		if e != 0 {
			t.werrno = e
			return true
		}
		t.batchWrites.Add(1)
		for i := t.wsent; i < t.wsent+n; i++ {
			t.wbyts += int64(t.wm.hs[i].Len)
			t.wpkts += int64(t.wsegs[i])
			if t.wsegs[i] > 1 {
				t.offloadRuns.Add(1)
			}
		}
		t.wsent += n
	}
	return true
}

// sendApart sends batch entry i's run one packet at a time (sendto), for
// a kernel that refused it as one.
func (t *Transport) sendApart(fd uintptr, i int) {
	for _, iov := range t.wm.bufs(i) {
		// A buffer holds whole packets of the run: all wseg[i] bytes
		// long but its last.
		for run := unsafe.Slice(iov.Base, int(iov.Len)); len(run) > 0; {
			p := run[:min(t.wseg[i], len(run))]
			run = run[len(p):]
			t.sendOne(fd, p, t.wsas[i])
		}
	}
}

// sendOne is one sendto of a run the kernel refused as one (sendApart).
func (t *Transport) sendOne(fd uintptr, p []byte, sa *syscall.SockaddrInet4) {
	switch err := syscall.Sendto(int(fd), p, 0, sa); {
	case err == nil:
		t.wpkts++
		t.wbyts += int64(len(p))
	case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.ENOBUFS):
		t.sendDrops.Add(1)
		t.pause()
	default:
		t.sendErrors.Add(1)
	}
}

// sendNow is one non-blocking sendto: the RawConn callback reports done at
// once, so a full socket buffer (EAGAIN) drops the packet instead of
// parking the stack's goroutine. Only the stack's goroutine sends, so the
// call's arguments travel in fields and the callback is a method value made
// once: a send allocates nothing.
func (t *Transport) sendNow(pkt []byte, sa *syscall.SockaddrInet4) {
	t.wpkt, t.wsa = pkt, sa
	err := t.raw.Write(t.writeFn)
	serr := t.werr
	t.wpkt, t.wsa, t.werr = nil, nil, nil
	switch {
	case err == nil && serr == nil:
		t.packetsSent.Add(1)
		t.bytesSent.Add(int64(len(pkt)))
	case errors.Is(serr, syscall.EAGAIN) || errors.Is(serr, syscall.ENOBUFS):
		t.sendDrops.Add(1)
		t.pause()
	default:
		t.sendErrors.Add(1)
	}
}

func (t *Transport) sendto(fd uintptr) bool {
	t.werr = syscall.Sendto(int(fd), t.wpkt, 0, t.wsa)
	return true
}

// Writable implements stack.Pacer: false for a short while (PauseFor)
// after the kernel refused a packet, so the stack stops pulling application
// sends instead of handing the transport more to drop.
func (t *Transport) Writable() bool { return !t.full.Load() }

// pause marks the transport full and, after PauseFor, writable again, then
// wakes the node (stack.Node.Wake) so it pulls waiting sends.
func (t *Transport) pause() {
	if !t.full.CompareAndSwap(false, true) {
		return
	}
	if t.resume == nil {
		t.resume = time.AfterFunc(pauseFor, t.unpause)
		return
	}
	t.resume.Reset(pauseFor)
}

func (t *Transport) unpause() {
	t.full.Store(false)
	t.mu.Lock()
	w, _ := t.sink.(interface{ Wake() })
	t.mu.Unlock()
	if w != nil {
		w.Wake()
	}
}

// WakeIn implements stack.Waker: the node's next timer is due in d.
// Timers due within alarmBelow get a timerfd beside them, so they fire on
// time rather than up to a millisecond late (see alarm); the pack layer's
// flush deadline of a few hundred microseconds is one. A timer already
// due needs none (the runtime runs it before it sleeps), and an alarm
// already set for up to alarmSlack after the deadline is kept: a busy
// node re-arms its timer every step, and a system call each time cost the
// sender a fifth of its CPU. Only the node's goroutine calls it.
func (t *Transport) WakeIn(d time.Duration) {
	if d <= 0 || d >= alarmBelow {
		return
	}
	if t.alarm == nil {
		if t.alarm = newAlarm(); t.alarm == nil {
			t.alarm = &alarm{fd: -1}
		}
	}
	if t.alarm.fd >= 0 {
		t.alarm.wakeIn(d)
	}
}

// alarmBelow is the longest timer WakeIn arms the timerfd for: the
// runtime's lateness (under a millisecond) matters to short timers only.
const alarmBelow = 5 * time.Millisecond

// alarmSlack is how much later than a timer's deadline its alarm may
// ring: set alarmSlack/2 late, an alarm is kept while the deadline moves
// by less than that either way.
const alarmSlack = 50 * time.Microsecond

// PauseFor is how long the transport reports itself not writable after a
// send was refused.
const PauseFor = 200 * time.Microsecond

// pauseFor is PauseFor, longer in a test that looks at the pause from
// outside (a busy machine can let 200 µs pass between two statements).
var pauseFor = PauseFor

// Subscribe opens the group's multicast socket, joins the group on the
// configured interface and starts its reader.
func (t *Transport) Subscribe(g event.GroupID) error {
	return t.SubscribeChannel(event.ChannelOf(g))
}

// SubscribeChannel opens channel ch's multicast socket, joins its address
// on the configured interface and starts its reader (stack.Channels).
func (t *Transport) SubscribeChannel(g event.ChannelID) error {
	ga, err := ChannelAddr(g, t.cfg.MulticastPort)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return stack.ErrClosed
	}
	if t.groups[g] != nil || t.cfg.Fanout { // fan-out: everything comes to the unicast socket
		return nil
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			// Several nodes on one host bind the same group address.
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
			if serr == nil {
				// Go binds a multicast listen address as 0.0.0.0, so
				// without this the socket would also hear every other
				// group joined on the host at the same port.
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipMulticastAll, 0)
			}
		}); err != nil {
			return err
		}
		return serr
	}}
	c, err := lc.ListenPacket(context.Background(), "udp4", ga.String())
	if err != nil {
		return fmt.Errorf("udp: subscribe %v at %v: %v", g, ga, err)
	}
	conn := c.(*net.UDPConn)
	setBuffers(conn, t.cfg.SocketBuffer, t.gro())
	pc := ipv4.NewPacketConn(conn)
	if err := pc.JoinGroup(t.ifi, &net.UDPAddr{IP: ga.IP}); err != nil {
		conn.Close()
		return fmt.Errorf("udp: join %v (%v) on %s: %v", g, ga.IP, t.ifi.Name, err)
	}
	_ = pc.SetMulticastLoopback(true)
	rc, err := conn.SyscallConn()
	if err != nil {
		conn.Close()
		return err
	}
	t.groups[g] = &groupSock{conn: conn, pc: pc}
	t.wg.Add(1)
	go t.read(rc)
	return nil
}

// Unsubscribe leaves the group and closes its socket.
func (t *Transport) Unsubscribe(g event.GroupID) error {
	return t.UnsubscribeChannel(event.ChannelOf(g))
}

// UnsubscribeChannel leaves channel ch and closes its socket
// (stack.Channels).
func (t *Transport) UnsubscribeChannel(g event.ChannelID) error {
	t.mu.Lock()
	gs := t.groups[g]
	delete(t.groups, g)
	t.mu.Unlock()
	if gs == nil {
		return nil
	}
	ga, _ := ChannelAddr(g, t.cfg.MulticastPort) // it mapped when subscribed
	_ = gs.pc.LeaveGroup(t.ifi, &net.UDPAddr{IP: ga.IP})
	return gs.conn.Close()
}

// reader is one socket's receive state, shared by its reader goroutine
// and the node goroutine's Poll. mu is held from a recvmmsg that returned
// packets until their batch is handed to the sink, so Poll (which only
// tries the lock) never reads a socket's later packets ahead of earlier
// ones still on their way.
//
// The reader's memory is Batches*BatchSize chunks of MaxPacket bytes, one
// per datagram (or GRO buffer) read. A read takes up to BatchSize free
// chunks, and the batch it hands the node keeps only those it filled: the
// rest are free again at once, and the batch's come back when the node
// gives the batch back. A read of a few packets (the usual one while the
// node keeps up) so keeps a few chunks, and messages held in place keep
// only those: at 1% loss fifo holds almost every message for a repair's
// round trip, in tens of such batches. The budget (event.Pins.Room) lets
// held messages pin one more batch while BatchSize chunks are free, so a
// read always finds room once the batches held messages do not keep come
// back.
type reader struct {
	rc syscall.RawConn
	mu sync.Mutex
	bs int // chunks a read takes at most (BatchSize)

	// cmu guards free, reading and spare: the node goroutine gives back
	// batches while the reader and Poll take chunks.
	cmu     sync.Mutex
	mem     []byte
	mp      int     // a chunk's bytes (MaxPacket)
	free    []int32 // free chunks, the last freed on top
	reading int     // chunks taken by reads in progress (free unless filled)
	spare   []*readBatch
	maxPkts int           // packets a batch holds at most
	wake    chan struct{} // chunks came back (capacity 1)

	pins  event.Pins // the batches held messages keep (the node's goroutine)
	m     *mmsg
	oob   []byte
	drops uint32 // the socket's drop counter as last seen
	// Poll's call (made once: a RawConn callback would allocate).
	pn     int
	perrno syscall.Errno
	pollFn func(uintptr)
	pb     *readBatch
}

// readBatch is a batch and the chunks its packets were read into.
type readBatch struct {
	stack.Batch
	r      *reader
	chunks []int32
}

func (t *Transport) newReader(rc syscall.RawConn) *reader {
	bs, mp := t.cfg.BatchSize, t.cfg.MaxPacket
	n := t.cfg.Batches * bs
	r := &reader{rc: rc, bs: bs, mem: make([]byte, n*mp), mp: mp, free: make([]int32, n),
		wake: make(chan struct{}, 1), maxPkts: bs}
	if t.gro() {
		r.maxPkts *= groMaxSegs // a read may hold GRO buffers
	}
	for i := range r.free {
		r.free[i] = int32(n - 1 - i) // the first chunk on top
	}
	r.pins.Room = r.room
	r.m = newMmsg(bs, 1)
	r.oob = make([]byte, bs*oobSize)
	for i := range bs {
		r.m.setOOB(i, r.oob[i*oobSize:(i+1)*oobSize])
	}
	r.pollFn = func(fd uintptr) {
		r.point(r.pb)
		r.pn, r.perrno = r.m.recv(fd, len(r.pb.chunks))
	}
	t.mu.Lock()
	t.readers = append(t.readers, r)
	t.mu.Unlock()
	return r
}

// dropReader forgets a reader whose socket closed.
func (t *Transport) dropReader(r *reader) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.readers = slices.DeleteFunc(slices.Clone(t.readers), func(x *reader) bool { return x == r })
	t.closedCopies += r.pins.Copies()
}

// room reports whether held messages may pin one more batch: a read's
// worth of chunks is free (event.Pins.Room, on the node goroutine).
func (r *reader) room() bool {
	r.cmu.Lock()
	defer r.cmu.Unlock()
	return len(r.free)+r.reading >= r.bs
}

// take returns a batch holding up to BatchSize free chunks to read into,
// or nil if none is free.
func (r *reader) take() *readBatch {
	r.cmu.Lock()
	defer r.cmu.Unlock()
	k := min(r.bs, len(r.free))
	if k == 0 {
		return nil
	}
	var b *readBatch
	if n := len(r.spare); n > 0 {
		b, r.spare = r.spare[n-1], r.spare[:n-1]
	} else {
		b = &readBatch{r: r, chunks: make([]int32, 0, r.bs)}
		b.Batch = stack.Batch{Pkts: make([][]byte, 0, r.bs), Done: b.giveBack, Pins: &r.pins}
	}
	top := len(r.free) - k
	b.chunks = append(b.chunks[:0], r.free[top:]...)
	slices.Reverse(b.chunks) // the most recently freed (warmest) first
	r.free = r.free[:top]
	r.reading += k
	return b
}

// keep ends b's read, which filled its first n chunks: the rest are free
// again, and b is given back at once if it holds nothing.
func (r *reader) keep(b *readBatch, n int) {
	r.cmu.Lock()
	r.reading -= len(b.chunks)
	for i := len(b.chunks) - 1; i >= n; i-- {
		r.free = append(r.free, b.chunks[i])
	}
	b.chunks = b.chunks[:n]
	r.cmu.Unlock()
	if n == 0 {
		b.giveBack(&b.Batch)
	}
}

// giveBack is the batch's Done: its chunks are free again (from the node
// goroutine, or a reader that did not hand it over).
func (b *readBatch) giveBack(*stack.Batch) {
	r := b.r
	b.Pkts = b.Pkts[:0]
	r.cmu.Lock()
	for i := len(b.chunks) - 1; i >= 0; i-- {
		r.free = append(r.free, b.chunks[i])
	}
	b.chunks = b.chunks[:0]
	r.spare = append(r.spare, b)
	r.cmu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// chunk is chunk c's memory.
func (r *reader) chunk(c int32) []byte {
	return r.mem[int(c)*r.mp : (int(c)+1)*r.mp : (int(c)+1)*r.mp]
}

// point aims the headers at b's chunks.
func (r *reader) point(b *readBatch) {
	for i, c := range b.chunks {
		r.m.set(i, r.chunk(c))
		r.m.hs[i].Hdr.SetControllen(oobSize)
	}
}

// read is one socket's reader: recvmmsg into the transport's buffers, hand
// each batch to the sink, wait for free chunks when none is. The RawConn
// parks the goroutine in the poller while the socket is empty.
func (t *Transport) read(rc syscall.RawConn) {
	defer t.wg.Done()
	r := t.newReader(rc)
	defer t.dropReader(r)
	var (
		n     int
		errno syscall.Errno
		b     *readBatch
	)
	recv := func(fd uintptr) bool {
		r.mu.Lock()
		r.point(b)
		n, errno = r.m.recv(fd, len(b.chunks))
		if errno == syscall.EAGAIN {
			r.mu.Unlock()
			return false // wait in the poller for more
		}
		return true // hold mu until the batch is handed over
	}
	for {
		if b = r.take(); b == nil {
			select {
			case <-r.wake:
				continue
			case <-t.closing:
				return
			}
		}
		if err := rc.Read(recv); err != nil {
			r.keep(b, 0)
			return // closed (mu is not held: the last call saw EAGAIN or none was made)
		}
		if errno != 0 {
			r.mu.Unlock()
			r.keep(b, 0)
			if errno == syscall.EINTR {
				continue
			}
			return // the socket failed (closed under us)
		}
		t.fill(r, &b.Batch, b.chunks, n)
		r.keep(b, n)
		if n == 0 {
			r.mu.Unlock()
			continue
		}
		t.mu.Lock()
		sink := t.sink
		t.mu.Unlock()
		if len(b.Pkts) == 0 || sink == nil || !sink.Input(&b.Batch) {
			b.giveBack(&b.Batch)
		}
		r.mu.Unlock()
	}
}

// fill puts the n packets a recvmmsg read into chunks into b, counting.
// r.mu is held.
func (t *Transport) fill(r *reader, b *stack.Batch, chunks []int32, n int) {
	m, mp := r.m, t.cfg.MaxPacket
	t.batches.Add(1)
	var bytes int64
	for i := range n {
		h := &m.hs[i]
		v, ok, seg := controls(r.oob[i*oobSize : i*oobSize+int(h.Hdr.Controllen)])
		if ok && v != r.drops {
			t.kernelDrops.Add(int64(v - r.drops)) // the counter only grows (mod 2^32)
			r.drops = v
		}
		if h.Hdr.Flags&syscall.MSG_TRUNC != 0 || int(h.Len) > mp {
			t.truncated.Add(1)
			continue
		}
		p := r.chunk(chunks[i])[:h.Len]
		if seg <= 0 || seg >= len(p) {
			seg = len(p) // one datagram
		} else {
			t.offloadReads.Add(1) // a GRO buffer: datagrams of seg bytes, the last maybe shorter
		}
		for len(p) > 0 {
			q := p[:min(seg, len(p))]
			p = p[len(q):]
			if len(b.Pkts) == r.maxPkts {
				t.truncated.Add(1) // more datagrams than a batch holds (never from Linux)
				continue
			}
			if t.cfg.Learn > 0 {
				if ip, port, ok := m.from(i); ok {
					t.observe(q, ip, port)
				}
			}
			b.Pkts = append(b.Pkts, q)
			bytes += int64(len(q))
		}
	}
	t.packetsRecv.Add(int64(len(b.Pkts)))
	t.bytesRecv.Add(bytes)
}

// Poll reads every socket once without waiting, on the node goroutine
// (stack.Poller): with one P and the node always busy, the runtime would
// otherwise wake the readers only about every 10 ms. A socket whose reader
// is handing over a batch, or that has no free chunk, is skipped.
func (t *Transport) Poll(receive func(*stack.Batch)) {
	t.mu.Lock()
	rs, sink := t.readers, t.sink
	t.mu.Unlock()
	if sink == nil {
		return // not wired yet: nothing to filter through
	}
	filter, _ := sink.(Filter)
	for _, r := range rs {
		if !r.mu.TryLock() {
			continue
		}
		b := r.take()
		if b == nil {
			r.mu.Unlock()
			continue
		}
		r.pb = b
		r.pn, r.perrno = 0, 0
		if err := r.rc.Control(r.pollFn); err != nil || r.perrno != 0 {
			r.keep(b, 0)
			r.mu.Unlock()
			continue // nothing there (EAGAIN), or closed: the reader sees to it
		}
		t.polls.Add(1)
		t.fill(r, &b.Batch, b.chunks, r.pn)
		r.keep(b, r.pn)
		if r.pn == 0 {
			r.mu.Unlock()
			continue
		}
		if filter != nil {
			filter.Filter(&b.Batch)
		}
		if len(b.Pkts) == 0 {
			b.giveBack(&b.Batch)
		} else {
			receive(&b.Batch) // releases b
		}
		r.mu.Unlock()
	}
}

// Stats returns the transport's counters.
func (t *Transport) Stats() Stats {
	return Stats{
		PacketsSent: t.packetsSent.Load(), BytesSent: t.bytesSent.Load(),
		SendDrops: t.sendDrops.Load(), SendErrors: t.sendErrors.Load(),
		PacketsReceived: t.packetsRecv.Load(), BytesReceived: t.bytesRecv.Load(),
		Truncated: t.truncated.Load(), BatchReads: t.batches.Load(), BatchWrites: t.batchWrites.Load(),
		OffloadRuns: t.offloadRuns.Load(), OffloadReads: t.offloadReads.Load(),
		Learned: t.learnedN.Load(), Forgotten: t.forgotten.Load(), KernelDrops: t.kernelDrops.Load(),
		Polls: t.polls.Load(), HeldCopies: t.heldCopies(),
	}
}

// heldCopies sums the readers' copies of held messages, those of closed
// sockets included.
func (t *Transport) heldCopies() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.closedCopies
	for _, r := range t.readers {
		n += r.pins.Copies()
	}
	return n
}

// Close closes every socket and waits for the readers to stop. Close the
// Node first (its Input then refuses batches), then the transport.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.closing)
	gs := t.groups
	t.groups = map[event.ChannelID]*groupSock{}
	t.mu.Unlock()
	for _, g := range gs {
		g.conn.Close()
	}
	if t.alarm != nil && t.alarm.f != nil {
		t.alarm.close()
	}
	err := t.uc.Close()
	t.wg.Wait()
	return err
}

var (
	_ stack.Transport = (*Transport)(nil)
	_ stack.Pacer     = (*Transport)(nil)
	_ stack.Channels  = (*Transport)(nil)
	_ stack.Flusher   = (*Transport)(nil)
	_ stack.Waker     = (*Transport)(nil)
	_ stack.Poller    = (*Transport)(nil)
)

// ipMulticastAll is Linux's IP_MULTICAST_ALL (missing from package syscall).
const ipMulticastAll = 49

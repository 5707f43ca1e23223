package udp

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsg is the header array of one recvmmsg or sendmmsg call: every header
// points at an iovec and a socket address of its own, all made once, so a
// call allocates nothing. (x/net's ReadBatch parses every source address
// into a new net.UDPAddr: two allocations per packet.)
type mmsg struct {
	hs    []unix.Mmsghdr
	iovs  []unix.Iovec // k per header: a GSO run's packets, one iovec each
	k     int
	names []unix.RawSockaddrInet4
}

// newMmsg makes n headers of room for k buffers each.
func newMmsg(n, k int) *mmsg {
	m := &mmsg{hs: make([]unix.Mmsghdr, n), iovs: make([]unix.Iovec, n*k), k: k, names: make([]unix.RawSockaddrInet4, n)}
	for i := range m.hs {
		m.hs[i].Hdr.Iov = &m.iovs[i*k]
		m.hs[i].Hdr.Iovlen = 1
		m.hs[i].Hdr.Name = (*byte)(unsafe.Pointer(&m.names[i]))
		m.hs[i].Hdr.Namelen = unix.SizeofSockaddrInet4
	}
	return m
}

// set points entry i at buffer b (to fill or to send).
func (m *mmsg) set(i int, b []byte) {
	m.iovs[i*m.k].Base = unsafe.SliceData(b)
	m.iovs[i*m.k].SetLen(len(b))
	m.hs[i].Hdr.Iovlen = 1
	m.hs[i].Len = 0
	m.hs[i].Hdr.Flags = 0
	m.hs[i].Hdr.Namelen = unix.SizeofSockaddrInet4
}

// add appends buffer b to entry i's buffers (at most k); a b that
// starts where the last buffer ends extends it instead (one buffer is
// cheaper for the kernel to copy from).
func (m *mmsg) add(i int, b []byte) {
	j := i*m.k + int(m.hs[i].Hdr.Iovlen)
	if last := &m.iovs[j-1]; unsafe.Add(unsafe.Pointer(last.Base), last.Len) == unsafe.Pointer(unsafe.SliceData(b)) {
		last.SetLen(int(last.Len) + len(b))
		return
	}
	m.iovs[j].Base = unsafe.SliceData(b)
	m.iovs[j].SetLen(len(b))
	m.hs[i].Hdr.Iovlen++
}

// bufs is entry i's buffers.
func (m *mmsg) bufs(i int) []unix.Iovec {
	return m.iovs[i*m.k : i*m.k+int(m.hs[i].Hdr.Iovlen)]
}

// setOOB gives entry i room for control messages.
func (m *mmsg) setOOB(i int, oob []byte) {
	m.hs[i].Hdr.Control = unsafe.SliceData(oob)
	m.hs[i].Hdr.SetControllen(len(oob))
}

// setAddr makes entry i go to sa.
func (m *mmsg) setAddr(i int, sa *syscall.SockaddrInet4) {
	n := &m.names[i]
	n.Family = unix.AF_INET
	p := (*[2]byte)(unsafe.Pointer(&n.Port))
	p[0], p[1] = byte(sa.Port>>8), byte(sa.Port)
	n.Addr = sa.Addr
}

// from is entry i's source address after a recvmmsg.
func (m *mmsg) from(i int) (ip [4]byte, port int, ok bool) {
	n := &m.names[i]
	if m.hs[i].Hdr.Namelen < unix.SizeofSockaddrInet4 || n.Family != unix.AF_INET {
		return ip, 0, false
	}
	p := (*[2]byte)(unsafe.Pointer(&n.Port))
	return n.Addr, int(p[0])<<8 | int(p[1]), true
}

// recv is one non-blocking recvmmsg into entries [0, n) on fd.
func (m *mmsg) recv(fd uintptr, n int) (int, syscall.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&m.hs[0])), uintptr(n), unix.MSG_DONTWAIT, 0, 0)
	return int(r), e
}

// send is one non-blocking sendmmsg of entries [from, to) on fd.
func (m *mmsg) send(fd uintptr, from, to int) (int, syscall.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&m.hs[from])), uintptr(to-from), unix.MSG_DONTWAIT, 0, 0)
	return int(r), e
}

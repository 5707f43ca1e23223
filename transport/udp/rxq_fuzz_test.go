package udp

import (
	"encoding/binary"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzRxqOverflowMatchesStdlib checks rxqOverflow and controls, which
// read control messages by hand to allocate nothing, against the standard
// library's parser: wherever syscall.ParseSocketControlMessage accepts the
// bytes, rxqOverflow finds the first SO_RXQ_OVFL message with a 4-byte
// counter, and the same counter, or says there is none; controls finds
// the same counter and the first UDP_GRO segment size (0 if none).
func FuzzRxqOverflowMatchesStdlib(f *testing.F) {
	if syscall.SizeofCmsghdr == 16 {
		f.Add(cmsg(syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, []byte{7, 0, 0, 0}))
		f.Add(append(cmsg(syscall.IPPROTO_IP, 8, make([]byte, 12)), cmsg(syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, []byte{9, 1, 0, 0})...))
		f.Add(cmsg(syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, []byte{7, 0}))
		f.Add(append(cmsg(syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, []byte{3, 0, 0, 0}), cmsg(unix.SOL_UDP, unix.UDP_GRO, []byte{0xe8, 3, 0, 0})...))
		f.Add(append(cmsg(unix.SOL_UDP, unix.UDP_GRO, []byte{0xe8, 3}), cmsg(unix.SOL_UDP, unix.UDP_GRO, []byte{0xff, 0xff, 0xff, 0xff})...))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, oob []byte) {
		got, ok := rxqOverflow(oob)
		msgs, err := syscall.ParseSocketControlMessage(oob)
		if err != nil {
			return
		}
		var want uint32
		var wantSeg int
		found, foundSeg := false, false
		for _, m := range msgs {
			if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_RXQ_OVFL && len(m.Data) >= 4 && !found {
				want, found = binary.NativeEndian.Uint32(m.Data), true
			}
			if m.Header.Level == unix.SOL_UDP && m.Header.Type == unix.UDP_GRO && len(m.Data) >= 4 && !foundSeg {
				wantSeg, foundSeg = int(int32(binary.NativeEndian.Uint32(m.Data))), true
			}
		}
		if ok != found || got != want {
			t.Fatalf("rxqOverflow(%x) = %d, %v; the standard library finds %d, %v", oob, got, ok, want, found)
		}
		if d, dok, seg := controls(oob); d != want || dok != found || seg != wantSeg {
			t.Fatalf("controls(%x) = %d, %v, %d; the standard library finds %d, %v, %d", oob, d, dok, seg, want, found, wantSeg)
		}
	})
}

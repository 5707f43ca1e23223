package udp

import (
	"encoding/binary"
	"syscall"
	"testing"
)

// FuzzRxqOverflowMatchesStdlib checks rxqOverflow, which reads control
// messages by hand to allocate nothing, against the standard library's
// parser: wherever syscall.ParseSocketControlMessage accepts the bytes,
// rxqOverflow finds the first SO_RXQ_OVFL message with a 4-byte counter,
// and the same counter, or says there is none.
func FuzzRxqOverflowMatchesStdlib(f *testing.F) {
	if syscall.SizeofCmsghdr == 16 {
		f.Add(cmsg(syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, []byte{7, 0, 0, 0}))
		f.Add(append(cmsg(syscall.IPPROTO_IP, 8, make([]byte, 12)), cmsg(syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, []byte{9, 1, 0, 0})...))
		f.Add(cmsg(syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, []byte{7, 0}))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, oob []byte) {
		got, ok := rxqOverflow(oob)
		msgs, err := syscall.ParseSocketControlMessage(oob)
		if err != nil {
			return
		}
		var want uint32
		found := false
		for _, m := range msgs {
			if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_RXQ_OVFL && len(m.Data) >= 4 {
				want, found = binary.NativeEndian.Uint32(m.Data), true
				break
			}
		}
		if ok != found || got != want {
			t.Fatalf("rxqOverflow(%x) = %d, %v; the standard library finds %d, %v", oob, got, ok, want, found)
		}
	})
}

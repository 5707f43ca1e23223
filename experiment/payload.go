package experiment

import (
	"encoding/binary"
	"fmt"

	"github.com/layercast/layercast/event"
)

// PayloadHeader is the size of the header every experiment payload starts
// with: sender (4 bytes), group (4), index of the message in its
// (sender, group) stream counting from 0 (8), send time in nanoseconds of
// the run's clock (8), all big-endian. The rest is padding up to MsgSize.
const PayloadHeader = 24

// Stamp is what a payload header says.
type Stamp struct {
	Sender event.NodeID
	Group  event.GroupID
	Index  uint64
	Sent   event.Time
}

// PutStamp writes st into the first PayloadHeader bytes of p.
func PutStamp(p []byte, st Stamp) {
	_ = p[PayloadHeader-1]
	binary.BigEndian.PutUint32(p[0:], uint32(st.Sender))
	binary.BigEndian.PutUint32(p[4:], uint32(st.Group))
	binary.BigEndian.PutUint64(p[8:], st.Index)
	binary.BigEndian.PutUint64(p[16:], uint64(st.Sent))
}

// ReadStamp reads the header of a delivered payload.
func ReadStamp(p []byte) (Stamp, error) {
	if len(p) < PayloadHeader {
		return Stamp{}, fmt.Errorf("payload of %d bytes is shorter than the %d-byte experiment header", len(p), PayloadHeader)
	}
	return Stamp{
		Sender: event.NodeID(binary.BigEndian.Uint32(p[0:])),
		Group:  event.GroupID(binary.BigEndian.Uint32(p[4:])),
		Index:  binary.BigEndian.Uint64(p[8:]),
		Sent:   event.Time(binary.BigEndian.Uint64(p[16:])),
	}, nil
}

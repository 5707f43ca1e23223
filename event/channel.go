package event

import "strconv"

// ChannelID names a multicast channel: what a packet is multicast on. Every
// group has one (GroupChannel), and multi-group layers ask for more: one per
// QSM region, one per Spread site. The high byte is the channel's kind, the
// low 32 bits an id within the kind. How a channel maps to the network (an
// IP multicast address, a set of simulated nodes) is the transport's
// business.
//
// The zero ChannelID on a Cast going down means "the group's own channel".
type ChannelID uint64

// ChannelKind says what a channel serves.
type ChannelKind uint8

// Channel kinds.
const (
	// GroupChannel is a group's channel; the id is the GroupID.
	GroupChannel ChannelKind = iota
	// RegionChannel is a QSM region's channel (a set of nodes that are in
	// the same groups); the id is the region's.
	RegionChannel
	// SiteChannel is a Spread site's channel (the nodes of one LAN).
	SiteChannel
	// NumChannelKinds bounds the kinds transports must map.
	NumChannelKinds
)

var channelKindNames = [...]string{GroupChannel: "g", RegionChannel: "region", SiteChannel: "site"}

// Channel names the channel of the given kind and id.
func Channel(kind ChannelKind, id uint32) ChannelID {
	return ChannelID(uint64(kind)<<56 | uint64(id))
}

// ChannelOf is group g's channel.
func ChannelOf(g GroupID) ChannelID { return Channel(GroupChannel, uint32(g)) }

// Kind is the channel's kind.
func (c ChannelID) Kind() ChannelKind { return ChannelKind(c >> 56) }

// ID is the channel's id within its kind.
func (c ChannelID) ID() uint32 { return uint32(c) }

// Group is the group whose channel c is, or NoGroup if c is another kind.
func (c ChannelID) Group() GroupID {
	if c.Kind() != GroupChannel {
		return NoGroup
	}
	return GroupID(c.ID())
}

// Valid reports whether c is a known kind with only the kind and id bits
// set.
func (c ChannelID) Valid() bool {
	return c.Kind() < NumChannelKinds && uint64(c)>>32&0xffffff == 0
}

// String prints a channel as <kind><id>: g7, region3, site1.
func (c ChannelID) String() string {
	if !c.Valid() {
		return "chan?" + strconv.FormatUint(uint64(c), 16)
	}
	return channelKindNames[c.Kind()] + strconv.FormatUint(uint64(c.ID()), 10)
}

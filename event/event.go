package event

// Event is what layers exchange. It is passed by pointer within one step and
// copied into the stack's queues, so it stays small and holds no per-event
// allocations of its own.
//
// Ownership: the Message (if any) belongs to whoever holds the event. A layer
// that passes the event on hands the Message over; a layer that swallows a data
// event must call Msg.Release.
type Event struct {
	Kind  Kind
	Group GroupID
	// Peer is the source of an event going up and the destination of a Send
	// going down; NoNode for a multicast going down.
	Peer NodeID
	// OneMember, on a Cast going down with a Peer, sends the group's packet
	// to Peer alone (reliable's retransmission to the one member that asked
	// for it); the receiver sees an ordinary Cast from this node. The stack
	// refuses a Cast with a Peer and no OneMember (NetStats.BadCast) rather
	// than turn it into a unicast silently.
	OneMember bool
	// Control marks a Cast or Send that carries protocol control (acks, naks,
	// tokens) rather than application data. Control traffic is framed as such
	// on the wire and processed first on arrival.
	Control bool
	// BestEffort, on a Send going down, says the sender needs no delivery
	// guarantee for it (lec's repairs: worth something for milliseconds,
	// harmful when retransmitted behind newer traffic). A layer that makes
	// point-to-point sends reliable (tokenring) passes it once, unnumbered;
	// a loss of it is not recovered. The receiver sees an ordinary Send.
	BestEffort bool
	// Channel, on a Cast going down with no Peer, is the multicast channel
	// to send it on (Context.Channel); zero means the group's own channel.
	// The packet still carries Group.
	Channel ChannelID
	// Msg is the message for Cast, Send and Membership events.
	Msg *Message
	// View is set for View events.
	View *ViewInfo
	// Regions is set for Regions events: this node's derived membership.
	Regions *Neighbourhood
	// Lost is set for Lost events: which messages were skipped.
	Lost *LostRange
	// Cut is set on a Suspect going down that reports far sites cut off
	// by the wide-area links (event.Suspect): nil on anything else.
	Cut *SiteCut
	// Seq and Start, on a data Cast going up, are set by the layer that
	// gives sequenced delivery (compose.Sequenced: reliable): Seq is the
	// message's number in its sender's stream for the group (from 1), and
	// Start where that stream starts for this node, the join floor (every
	// message from Start on is owed to it, each delivered once, in any
	// order). Zero on anything else. fifo orders by them, so the floor
	// rule lives in one layer and travels in one header.
	Seq, Start uint32
}

// LostRange says which of a sender's messages in a group were given up
// (event.Lost): sequence numbers are the reporting layer's, per sender and
// group (fifo's stream sequence).
type LostRange struct {
	// First is the first sequence number skipped, when Bounded.
	First uint32
	// End is the first sequence number after the gap: the next one the
	// layer delivers from that sender.
	End uint32
	// Bounded is false when the layer never learnt where the gap begins
	// (fifo starting a stream whose floor it could not wait for): every
	// message of the sender below End not yet delivered is lost.
	Bounded bool
}

// SiteCut is a wide-area layer's report that far sites are cut off from
// it by its links for good (hop: no path of links up reaches them for
// dead_after), carried by a Suspect going down (Event.Cut). Membership
// removes one side of the split, never both: see event.Suspect.
type SiteCut struct {
	// Off are the sites no path of links reaches from the reporter,
	// sorted, none of them in Reach.
	Off []SiteID
	// Reach are the sites the reporter still reaches, its own included,
	// sorted: its side of the split.
	Reach []SiteID
}

// Count is the number of messages skipped, 0 when not Bounded.
func (r LostRange) Count() uint32 {
	if !r.Bounded {
		return 0
	}
	return r.End - r.First
}

// IsControl reports whether the event is processed before data: every
// non-data kind, and Cast or Send events marked Control.
func (e *Event) IsControl() bool { return !e.Kind.IsData() || e.Control }

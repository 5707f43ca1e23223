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
	// Control marks a Cast or Send that carries protocol control (acks, naks,
	// tokens) rather than application data. Control traffic is framed as such
	// on the wire and processed first on arrival.
	Control bool
	// Channel, on a Cast going down with no Peer, is the multicast channel
	// to send it on (Context.Channel); zero means the group's own channel.
	// The packet still carries Group.
	Channel ChannelID
	// Msg is the message for Cast, Send and Membership events.
	Msg *Message
	// View is set for View events.
	View *ViewInfo
	// Aux carries structured control values for other kinds.
	Aux any
}

// IsControl reports whether the event is processed before data: every
// non-data kind, and Cast or Send events marked Control.
func (e *Event) IsControl() bool { return !e.Kind.IsData() || e.Control }

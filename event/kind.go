package event

// Kind says what an event is. The values are part of the wire format for Cast
// and Send (the stack frames packets with them), so the list is append-only.
type Kind uint8

// Event kinds. Cast and Send carry data; everything else is control and is
// processed before data when both are waiting (QSM 2006, section 3).
const (
	KindNone Kind = iota
	// Cast is a multicast to Event.Group. Going down: to every member.
	// Going up: received from Event.Peer.
	Cast
	// Send is point-to-point. Going down: to Event.Peer. Going up: from Event.Peer.
	Send
	// View installs a new view of Event.Group (Event.View).
	View
	// Suspect says Event.Peer may have failed (from a failure detector).
	Suspect
	// Fail says Event.Peer has failed and is being removed.
	Fail
	// Stable reports that a message prefix is held by every member; the
	// stability information is in Event.Aux.
	Stable
	// Block asks layers above to stop sending in Event.Group until Unblock
	// (view-change flush).
	Block
	// Unblock ends a Block.
	Unblock
	// Join asks to join Event.Group (from the application, going down).
	Join
	// Leave asks to leave Event.Group (from the application, going down).
	Leave
	// Exit says the stack is shutting down.
	Exit
	// Regions hands multi-group layers the derived membership structures of
	// this node (Event.Aux holds a *Neighbourhood and region views).
	Regions
	// HoldOff tells the application to stop casting to Event.Group (flow
	// control back-pressure, e.g. mflow's hi_wmark).
	HoldOff
	// Resume ends a HoldOff.
	Resume
	// Lost reports going up that a message could not be recovered
	// (Event.Aux says which); reliable layers never emit it in normal runs.
	Lost
	// Membership carries membership-service protocol messages (Event.Msg) to
	// and from the gms layer; it is control traffic.
	Membership
	// Custom is for layer-private control events passed between cooperating
	// layers (Event.Aux holds the value).
	Custom
	numKinds
)

var kindNames = [...]string{
	KindNone: "none", Cast: "cast", Send: "send", View: "view", Suspect: "suspect",
	Fail: "fail", Stable: "stable", Block: "block", Unblock: "unblock", Join: "join",
	Leave: "leave", Exit: "exit", Regions: "regions", HoldOff: "holdoff", Resume: "resume",
	Lost: "lost", Membership: "membership", Custom: "custom",
}

// String names the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind?"
}

// IsData reports whether events of this kind carry application data and so
// queue behind control.
func (k Kind) IsData() bool { return k == Cast || k == Send }

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return k > KindNone && k < numKinds }

package event

// Kind says what an event is. The values of the packet kinds (Cast, Send and
// Membership) are part of the wire format: the stack frames packets with
// them, so they are pinned below and never change. The other kinds never
// leave a node; their values are fixed too, only to keep logs comparable.
type Kind uint8

// Event kinds. Cast and Send carry data; everything else is control and is
// processed before data when both are waiting (QSM 2006, section 3).
//
// Every kind here has a producer; kinds nothing produced (the first Stable,
// Block, Unblock and Custom) were removed, and their values (6 to 8, 17) are
// not reused. New kinds go at the end.
const (
	KindNone Kind = 0
	// Cast is a multicast to Event.Group. Going down: to every member, or,
	// with Event.OneMember, to Event.Peer alone. Going up: received from
	// Event.Peer. Wire value 1.
	Cast Kind = 1
	// Send is point-to-point. Going down: to Event.Peer. Going up: from
	// Event.Peer. Wire value 2.
	Send Kind = 2
	// View installs a new view of Event.Group (Event.View).
	View Kind = 3
	// Suspect says, going up, that the failure detector suspects
	// Event.Peer. gms emits it for its own node when the membership
	// service probes it (the service suspects other nodes privately).
	// Going down, a layer above membership reports that it lost touch:
	// with Event.Peer alone (Cut nil; hop's far representative that no
	// link reaches), which membership probes and keeps if it answers; or,
	// with Event.Cut set, with whole far sites its links leave unreachable
	// for good (Peer is NoNode). Those membership removes even though they
	// may answer it, as in Spread, where a link failure initiates a
	// membership change, but only the smaller side of the split: gms's
	// service removes Cut.Off's members if they are fewer than
	// Cut.Reach's (on a tie, the side holding the lowest site id stays),
	// and ignores reports from nodes not in a group or suspected, so
	// both sides reporting each other never removes both. The removed
	// nodes join again as after any removal.
	Suspect Kind = 4
	// Fail says, going up, that Event.Peer was declared failed and removed
	// from every group. gms emits it for its own node when the service's
	// removal reaches it (others' removals arrive as views, not told apart
	// from leaving).
	Fail Kind = 5
	// Join asks to join Event.Group (from the application, going down).
	Join Kind = 9
	// Leave asks to leave Event.Group (from the application, going down).
	Leave Kind = 10
	// Exit says the stack is shutting down. It goes down from the top so a
	// layer can still send (gms's goodbye); buffers are released afterwards
	// by the stack calling stack.Closer on every layer, not on Exit.
	Exit Kind = 11
	// Regions hands multi-group layers the derived membership structures of
	// this node (Event.Regions).
	Regions Kind = 12
	// HoldOff tells the application to stop casting to Event.Group (flow
	// control back-pressure, e.g. mflow's hi_wmark).
	HoldOff Kind = 13
	// Resume ends a HoldOff.
	Resume Kind = 14
	// Lost reports going up that messages from Event.Peer in Event.Group
	// could not be recovered (Event.Lost says which); reliable layers never
	// emit it in normal runs.
	Lost Kind = 15
	// Membership carries membership-service protocol messages (Event.Msg) to
	// and from the gms layer; it is control traffic. Wire value 16.
	Membership Kind = 16
	// LossHint passes what one layer learnt about a loss to the layer that
	// can act on it. Going up, it says a message from Event.Peer in
	// Event.Group is missing (Ricochet's LEC reading a repair it cannot
	// decode, section 4.2.7): Event.Lost, Bounded, gives the missing
	// message as End-1 in the reporting layer's numbering (per sender and
	// group), and First-1 numbers the anchor Event.Msg, a message of the
	// same sender and group as the reporting layer passed it up (nil if it
	// holds none; every number in between may be missing too). A layer
	// above reads its own header in the anchor to map the numbers to its
	// own. Going down, it answers: Event.Msg is the message numbered
	// Lost.First, got by other means (a retransmission), as the reporting
	// layer would have passed it up.
	LossHint Kind = 18
	// Block says, going up, that a view change of Event.Group is being
	// flushed (layers/vsync): the application should stop casting to the
	// group until Unblock. Casts made meanwhile are held back (the layer
	// also sends HoldOff), never dropped.
	Block Kind = 19
	// Unblock ends a Block: the new view has been passed up (just before)
	// and casting to Event.Group may resume.
	Unblock  Kind = 20
	numKinds Kind = 21
)

var kindNames = [...]string{
	KindNone: "none", Cast: "cast", Send: "send", View: "view", Suspect: "suspect", Fail: "fail", Join: "join",
	Leave: "leave", Exit: "exit", Regions: "regions", HoldOff: "holdoff", Resume: "resume",
	Lost: "lost", Membership: "membership", LossHint: "losshint", Block: "block", Unblock: "unblock",
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
func (k Kind) Valid() bool { return k > KindNone && k < numKinds && kindNames[k] != "" }

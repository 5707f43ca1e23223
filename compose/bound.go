package compose

// NodeLoad is what one node carries, as a layer's BufferBound reads it: the
// figures its buffers are bounded per (per group, per sender, per message).
type NodeLoad struct {
	// Groups is the number of groups the node is in.
	Groups int
	// Members is the number of members of each group, the node included.
	Members int
	// MaxMessage is the largest payload the application casts, in bytes.
	MaxMessage int
	// AppQueue is how many application sends the stack may hold between
	// the application and its top layer (stack.Config.AppQueue): sends it
	// took before a layer held the application off still reach the top
	// layer after it did.
	AppQueue int
}

// Senders is the number of other members the node receives from in each
// group (at least 0).
func (l NodeLoad) Senders() int { return max(l.Members-1, 0) }

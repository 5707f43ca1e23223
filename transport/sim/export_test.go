package sim

// Asked is how many times the network asked a stack for its next wake-up.
func (n *Network) Asked() int64 { return n.asked }

// HeapOnly makes the event queue keep its calendar's buckets off, as in a
// small network, whatever the network's size.
func (n *Network) HeapOnly() { n.q.heapOnly = true }

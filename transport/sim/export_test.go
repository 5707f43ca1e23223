package sim

// Asked is how many times the network asked a stack for its next wake-up.
func (n *Network) Asked() int64 { return n.asked }

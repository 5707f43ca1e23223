package cluster

import (
	"slices"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
	"github.com/layercast/layercast/transport/udp"
)

// Metrics is every counter of a cluster.
type Metrics struct {
	// Nodes holds one entry per node, in id order.
	Nodes []NodeMetrics
	// Sim is the simulated network's totals (zero over UDP).
	Sim sim.Stats
}

// NodeMetrics is one node's counters.
type NodeMetrics struct {
	Node int
	// Net counts what the stack sent and received at its bottom edge.
	Net stack.NetStats
	// Layers holds each layer's counters, top first.
	Layers []stack.LayerCounters
	// UDP is the node's socket counters (zero in the simulator).
	UDP udp.Stats
}

// Counter returns the named counter of the named layer (0 if absent).
func (m NodeMetrics) Counter(layer, name string) int64 {
	for _, l := range m.Layers {
		if l.Layer != layer {
			continue
		}
		if i := slices.Index(l.Names, name); i >= 0 {
			return l.Values[i]
		}
	}
	return 0
}

// Sum adds the named counter of the named layer over every node.
func (m Metrics) Sum(layer, name string) int64 {
	var t int64
	for _, n := range m.Nodes {
		t += n.Counter(layer, name)
	}
	return t
}

// Metrics reads every node's counters (and the simulated network's).
func (c *Cluster) Metrics() Metrics {
	var m Metrics
	read := func(id event.NodeID, st *stack.Stack) NodeMetrics {
		return NodeMetrics{Node: int(id), Net: st.Net(), Layers: st.Counters()}
	}
	for _, id := range c.nodes {
		if c.cfg.UDP {
			u := c.udpNodes[id]
			if u == nil {
				continue
			}
			var nm NodeMetrics
			if err := u.node.Do(func(st *stack.Stack) { nm = read(id, st) }); err != nil {
				nm = NodeMetrics{Node: int(id)}
			}
			nm.UDP = u.tr.Stats()
			m.Nodes = append(m.Nodes, nm)
			continue
		}
		if st := c.stacks[id]; st != nil {
			m.Nodes = append(m.Nodes, read(id, st))
		}
	}
	if c.net != nil {
		m.Sim = c.net.Stats()
	}
	return m
}

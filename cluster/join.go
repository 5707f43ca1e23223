package cluster

import (
	"fmt"
	"slices"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
)

// Join adds node to a group after Start. The node must be a member of some
// group already (Start built its stack). With static membership the group's
// next view, and every node's neighbourhood, are installed at once (over
// UDP too, on each node's goroutine, before Join returns); with gms
// the node asks the service, and its casts to the group fail with "no view"
// until the service's view has arrived (run the cluster for a while).
func (c *Cluster) Join(node int, group string) error { return c.change(node, group, true) }

// Leave removes node from a group after Start, the same way Join adds it.
func (c *Cluster) Leave(node int, group string) error { return c.change(node, group, false) }

func (c *Cluster) change(node int, group string, join bool) error {
	// Only change writes groups, one at a time; readers elsewhere take
	// c.mu, which is never held while a node's goroutine is waited for.
	c.joinMu.Lock()
	defer c.joinMu.Unlock()
	verb := map[bool]string{true: "join", false: "leave"}[join]
	if !c.started || c.closed {
		return fmt.Errorf("cluster: %s before Start or after Close; declare the first members with Group", verb)
	}
	g, ok := c.ids[group]
	if !ok {
		return fmt.Errorf("cluster: no group %q (groups: %v)", group, c.names)
	}
	n := event.NodeID(node)
	st := c.stacks[n]
	if st == nil && (!c.cfg.UDP || c.udpNodes[n] == nil) {
		return fmt.Errorf("cluster: no node %d (nodes: %v): a node is made by naming it in a Group before Start", node, c.Nodes())
	}
	ms := c.groups[g-1]
	i, member := slices.BinarySearch(ms, n)
	switch {
	case join && member:
		return fmt.Errorf("cluster: node %d is already a member of %q", node, group)
	case !join && !member:
		return fmt.Errorf("cluster: node %d is not a member of %q", node, group)
	case !join && len(ms) <= 2:
		return fmt.Errorf("cluster: node %d cannot leave %q: a group needs at least 2 members", node, group)
	}
	if join {
		ms = slices.Insert(slices.Clone(ms), i, n)
	} else {
		ms = slices.Delete(slices.Clone(ms), i, i+1)
	}
	old := c.groups[g-1]
	c.mu.Lock()
	c.groups[g-1] = ms
	c.mu.Unlock()
	if c.gms {
		change := st.Leave
		if join {
			change = st.Join
		}
		if err := change(g); err != nil {
			return fmt.Errorf("cluster: node %d %s %q: %w", node, verb, group, err)
		}
		if !join {
			c.mu.Lock()
			delete(c.views, viewKey{n, g})
			c.mu.Unlock()
		}
		return nil
	}
	return c.reinstall(g, old, n, join)
}

// reinstall installs group g's next static view on its old and new members
// and every node's recomputed neighbourhood.
func (c *Cluster) reinstall(g event.GroupID, old []event.NodeID, n event.NodeID, join bool) error {
	c.viewIDs[g-1]++
	v := &event.ViewInfo{Group: g, ID: c.viewIDs[g-1], Members: c.groups[g-1]}
	if join {
		v.Joined = []event.NodeID{n}
	} else {
		v.Left = []event.NodeID{n}
	}
	views := map[event.GroupID]*event.ViewInfo{}
	for i, ms := range c.groups {
		gi := event.GroupID(i + 1)
		if gi == g {
			views[gi] = v
			continue
		}
		views[gi] = &event.ViewInfo{Group: gi, ID: c.viewIDs[i], Members: ms}
	}
	for _, id := range c.nodes {
		if slices.Contains(old, id) || id == n {
			if err := c.on(id, func(st *stack.Stack) { st.InstallView(v) }); err != nil {
				return err
			}
		}
	}
	c.mu.Lock()
	if join {
		c.views[viewKey{n, g}] = v.ID
	} else {
		delete(c.views, viewKey{n, g})
	}
	c.mu.Unlock()
	nbs := membership.Static(views)
	for _, id := range c.nodes {
		nb := nbs[id]
		if nb == nil {
			nb = &event.Neighbourhood{Self: id}
		}
		if err := c.on(id, func(st *stack.Stack) { st.InstallNeighbourhood(nb) }); err != nil {
			return err
		}
	}
	return nil
}

// on runs fn with node id's stack: at once in the simulator, on the node's
// goroutine over UDP.
func (c *Cluster) on(id event.NodeID, fn func(*stack.Stack)) error {
	if c.cfg.UDP {
		if err := c.udpNodes[id].node.Do(fn); err != nil {
			return fmt.Errorf("cluster: node %d: %w", id, err)
		}
		return nil
	}
	fn(c.stacks[id])
	return nil
}

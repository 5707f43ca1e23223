package cluster

import (
	"fmt"
	"strings"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// settleLimit bounds how long Start waits, in virtual time, for a
// membership service to install the first views.
const settleLimit = 60 * time.Second

// parseLoss reads Config.Loss; a bare rate ("2%") means uniform loss.
func parseLoss(text string) (sim.LossModel, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return nil, nil
	}
	if s != "none" && !strings.Contains(s, ":") {
		s = "uniform:" + s
	}
	m, err := sim.ParseLoss(s)
	if err != nil {
		return nil, fmt.Errorf("cluster: loss %q: %w", text, err)
	}
	return m, nil
}

func (c *Cluster) startSim() error {
	loss, err := parseLoss(c.cfg.Loss)
	if err != nil {
		return err
	}
	c.net = sim.New(sim.Config{Seed: c.cfg.Seed, Latency: c.cfg.Latency, Jitter: c.cfg.Jitter, Loss: loss})
	c.net.SetDropHook(func(from, to event.NodeID, g event.GroupID, _ []byte, reason string) {
		if c.onLoss == nil && !c.ch.wantL.Load() {
			return
		}
		l := Loss{From: int(from), To: int(to), Group: c.groupName(g), Reason: reason, At: c.net.Now().Duration()}
		if c.onLoss != nil {
			c.onLoss(l)
		}
		c.chanLoss(l)
	})
	c.stacks = make(map[event.NodeID]*stack.Stack, len(c.nodes))
	for _, id := range c.nodes {
		entries, err := compose.Build(c.spec)
		if err != nil {
			return err
		}
		nd := c.net.AddNode(id)
		st, err := stack.New(stack.Config{Self: id, Layers: entries, Transport: nd, Clock: nd,
			App: c.app(id, nd.Now), Seed: c.cfg.Seed, AppQueue: c.cfg.AppQueue})
		if err != nil {
			return fmt.Errorf("cluster: node %d: %w", id, err)
		}
		nd.Attach(st)
		c.stacks[id] = st
	}
	if c.gms {
		return c.startService()
	}
	views, nbs := c.staticViews()
	for _, id := range c.nodes {
		c.installStatic(c.stacks[id], views, nbs)
	}
	return nil
}

// startService adds the membership service the spec's layers name, has
// every member join its groups and runs until every member holds the view
// of each of its groups.
func (c *Cluster) startService() error {
	svc, err := compose.ServiceOf(c.spec, c.nodes)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	layer, need, entries := svc.Layer, svc.Need, svc.Entries
	nd := c.net.AddNode(need.Node)
	st, err := stack.New(stack.Config{Self: need.Node, Layers: entries, Transport: nd, Clock: nd, Seed: c.cfg.Seed})
	if err != nil {
		return fmt.Errorf("cluster: the service: %w", err)
	}
	nd.Attach(st)
	c.service = need.Node
	for _, id := range c.nodes {
		for _, g := range c.groupsOf(id) {
			if err := c.stacks[id].Join(g); err != nil {
				return fmt.Errorf("cluster: node %d joining %q: %w", id, c.groupName(g), err)
			}
		}
	}
	poll := need.Poll
	if poll <= 0 {
		poll = 10 * time.Millisecond
	}
	start := c.net.Now()
	for !c.settled() {
		if c.net.Now().Sub(start) > settleLimit {
			return fmt.Errorf("cluster: %s: views not installed after %v of virtual time (%s)", layer, settleLimit, need.Describe)
		}
		c.net.Run(poll)
	}
	return nil
}

// settled reports whether every member holds a view of each of its groups.
func (c *Cluster) settled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range c.nodes {
		for _, g := range c.groupsOf(id) {
			if _, ok := c.views[viewKey{id, g}]; !ok {
				return false
			}
		}
	}
	return true
}

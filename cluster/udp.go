package cluster

import (
	"errors"
	"fmt"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/udp"
)

// udpNode is one node on a real socket.
type udpNode struct {
	tr   *udp.Transport
	node *stack.Node
}

func (c *Cluster) startUDP() error {
	if c.gms {
		return errors.New("cluster: gms over UDP is not run by cluster; run `stacktool gms` and `stacktool node`, or use a spec without gms (static membership)")
	}
	c.udpNodes = make(map[event.NodeID]*udpNode, len(c.nodes))
	fail := func(err error) error { c.closeUDP(); return err }
	for _, id := range c.nodes {
		tr, err := udp.New(udp.Config{Self: id, Listen: "127.0.0.1:0", Interface: c.cfg.Interface,
			MulticastPort: c.cfg.MulticastPort}, nil)
		if err != nil {
			return fail(fmt.Errorf("cluster: node %d: %w", id, err))
		}
		c.udpNodes[id] = &udpNode{tr: tr}
	}
	for _, a := range c.udpNodes {
		for id, b := range c.udpNodes {
			if err := a.tr.SetAddr(id, b.tr.LocalAddr()); err != nil {
				return fail(fmt.Errorf("cluster: address of node %d: %w", id, err))
			}
		}
	}
	views, nbs := c.staticViews()
	for _, id := range c.nodes {
		u := c.udpNodes[id]
		entries, err := compose.Build(c.spec)
		if err != nil {
			return fail(err)
		}
		var nd *stack.Node
		now := func() event.Time {
			if nd == nil {
				return 0
			}
			return nd.Now()
		}
		nd, err = stack.NewNode(stack.NodeConfig{Stack: stack.Config{Self: id, Layers: entries, Transport: u.tr,
			App: c.app(id, now), Seed: c.cfg.Seed, AppQueue: c.cfg.AppQueue}})
		if err != nil {
			return fail(fmt.Errorf("cluster: node %d: %w", id, err))
		}
		u.node = nd
		u.tr.SetSink(nd)
	}
	for _, id := range c.nodes {
		if err := c.udpNodes[id].node.Do(func(st *stack.Stack) { c.installStatic(st, views, nbs) }); err != nil {
			return fail(fmt.Errorf("cluster: node %d: %w", id, err))
		}
	}
	return nil
}

func (c *Cluster) anyUDP() *udpNode {
	for _, u := range c.udpNodes {
		if u.node != nil {
			return u
		}
	}
	return nil
}

func (c *Cluster) closeUDP() {
	for _, u := range c.udpNodes {
		if u.node != nil {
			u.node.Close()
		}
		if u.tr != nil {
			u.tr.Close()
		}
	}
}

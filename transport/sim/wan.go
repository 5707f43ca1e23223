package sim

import (
	"time"

	"github.com/layercast/layercast/event"
)

// Link describes a WAN link between two sites.
type Link struct {
	// Latency and Jitter replace Config's for packets crossing the link.
	Latency, Jitter time.Duration
	// Bandwidth is the link's rate in bytes per second (zero: unlimited).
	// Packets crossing in one direction share one FIFO queue: each takes
	// size/Bandwidth on the link after the ones before it.
	Bandwidth float64
	// Queue bounds that FIFO in bytes; a packet that finds it full is
	// dropped. Zero: unbounded.
	Queue int
	// Loss replaces Config.Loss for packets crossing the link (nil: none).
	Loss LossModel
}

type wanLink struct {
	Link
	busy event.Time // when the link finishes sending what it has queued
}

type wanDep struct {
	w    *wanLink
	site int
	at   event.Time
}

// SetSite places a node in a site (all nodes start in site 0). Packets
// between nodes of one site use the Config latency, jitter and loss.
func (n *Network) SetSite(id event.NodeID, site int) {
	if nd := n.nodes[id]; nd != nil {
		nd.site = site
	}
}

// Site is the node's site.
func (nd *Node) Site() int { return nd.site }

// WANLink joins sites a and b by a link, one queue in each direction.
func (n *Network) WANLink(a, b int, l Link) {
	if n.wan == nil {
		n.wan = map[[2]int]*wanLink{}
	}
	n.wan[[2]int{a, b}] = &wanLink{Link: l}
	n.wan[[2]int{b, a}] = &wanLink{Link: l}
}

// wanDepart is when a packet of size bytes leaves the WAN link, or false if
// the link's queue is full. A multicast crosses the link once per remote
// site (routers copy it on the far side), so the receivers of one multicast
// in one site share one departure.
func (n *Network) wanDepart(w *wanLink, site int, g event.ChannelID, size int) (event.Time, bool) {
	if g != 0 { // a multicast
		for _, d := range n.wanDep {
			if d.w == w && d.site == site {
				return d.at, true
			}
		}
	}
	start := max(w.busy, n.now)
	if w.Bandwidth > 0 {
		if w.Queue > 0 && float64(start-n.now)*w.Bandwidth/1e9+float64(size) > float64(w.Queue) {
			return 0, false
		}
		start = start.Add(time.Duration(float64(size) * 1e9 / w.Bandwidth))
		w.busy = start
	}
	if g != 0 {
		n.wanDep = append(n.wanDep, wanDep{w: w, site: site, at: start})
	}
	return start, true
}

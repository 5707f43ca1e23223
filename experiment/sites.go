package experiment

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/spans"
	"github.com/layercast/layercast/transport/sim"
)

// This file maps the scenario's Spread sites (site: and wan: keys) onto
// transport/sim: which node sits in which site, and the WAN links between
// sites.

// SiteSpec places nodes in a site: `site: ID=NODES`, NODES a comma list of
// node numbers and ranges ("1-3,7").
type SiteSpec struct {
	Site  event.SiteID
	Nodes []event.NodeID
}

// WANSpec is one WAN link between two sites: `wan: A-B latency=30ms
// jitter=2ms bandwidth=1MB queue=64KB loss=uniform:1%` (bandwidth in bytes
// per second, queue in bytes; every setting but latency is optional).
type WANSpec struct {
	A, B      event.SiteID
	Latency   time.Duration
	Jitter    time.Duration
	Bandwidth int64
	Queue     int64
	Loss      string
	text      string
}

// maxSiteID bounds site ids (routing keeps sites in 64-bit masks).
const maxSiteID = 63

// ParseSite parses the value of a site: key.
func ParseSite(v string) (SiteSpec, error) {
	id, list, ok := strings.Cut(v, "=")
	if !ok {
		return SiteSpec{}, fmt.Errorf("%q: want ID=NODES, e.g. 1=1-3", v)
	}
	s, err := siteID(id)
	if err != nil {
		return SiteSpec{}, err
	}
	out := SiteSpec{Site: s}
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 32)
		b := a
		if err == nil && isRange {
			b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 32)
		}
		if err != nil || a < 1 || b < a || b-a > 1<<16 {
			return SiteSpec{}, fmt.Errorf("%q: %q is neither a node number nor a range a-b", v, item)
		}
		for n := a; n <= b; n++ {
			out.Nodes = append(out.Nodes, event.NodeID(n))
		}
	}
	return out, nil
}

func siteID(t string) (event.SiteID, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(t), 10, 32)
	if err != nil || n > maxSiteID {
		return 0, fmt.Errorf("site %q must be a number in [0, %d]", t, maxSiteID)
	}
	return event.SiteID(n), nil
}

// ParseWAN parses the value of a wan: key.
func ParseWAN(v string) (WANSpec, error) {
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return WANSpec{}, fmt.Errorf("empty: want A-B latency=30ms [jitter=, bandwidth=, queue=, loss=]")
	}
	a, b, ok := strings.Cut(fields[0], "-")
	if !ok {
		return WANSpec{}, fmt.Errorf("%q: the link must be named A-B (two site ids)", fields[0])
	}
	var w WANSpec
	var err error
	if w.A, err = siteID(a); err != nil {
		return w, err
	}
	if w.B, err = siteID(b); err != nil {
		return w, err
	}
	if w.A == w.B {
		return w, fmt.Errorf("%q joins site %d to itself", fields[0], w.A)
	}
	latency := false
	for _, f := range fields[1:] {
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			return w, fmt.Errorf("%q: want key=value", f)
		}
		switch k {
		case "latency":
			w.Latency, err = posDuration(val, false)
			latency = true
		case "jitter":
			w.Jitter, err = posDuration(val, true)
		case "bandwidth":
			w.Bandwidth, err = compose.ParseSize(val)
			if err == nil && w.Bandwidth <= 0 {
				err = fmt.Errorf("bandwidth %q must be positive (bytes per second)", val)
			}
		case "queue":
			w.Queue, err = compose.ParseSize(val)
		case "loss":
			if val != "none" {
				_, err = ParseLoss(val)
			}
			w.Loss = val
		default:
			err = fmt.Errorf("unknown setting %q (latency, jitter, bandwidth, queue, loss)", k)
		}
		if err != nil {
			return w, fmt.Errorf("wan %s: %s: %w", fields[0], k, err)
		}
	}
	if !latency {
		return w, fmt.Errorf("wan %s: latency= is required", fields[0])
	}
	w.text = strings.Join(fields, " ")
	return w, nil
}

// siteOf maps every node the scenario places to its site (others are in
// site 0).
func (sc *Scenario) siteOf() map[event.NodeID]event.SiteID {
	out := map[event.NodeID]event.SiteID{}
	for _, s := range sc.Sites {
		for _, n := range s.Nodes {
			out[n] = s.Site
		}
	}
	return out
}

// checkSites validates the sites and WAN links against the node count.
func (sc *Scenario) checkSites() error {
	seen := map[event.NodeID]event.SiteID{}
	for _, s := range sc.Sites {
		for _, n := range s.Nodes {
			if int(n) > sc.Nodes {
				return fmt.Errorf("scenario: site %d names n%d, but nodes are n1..n%d", s.Site, n, sc.Nodes)
			}
			if o, dup := seen[n]; dup && o != s.Site {
				return fmt.Errorf("scenario: n%d is placed in site %d and in site %d", n, o, s.Site)
			}
			seen[n] = s.Site
		}
	}
	links := map[[2]event.SiteID]bool{}
	for _, w := range sc.WAN {
		k := [2]event.SiteID{min(w.A, w.B), max(w.A, w.B)}
		if links[k] {
			return fmt.Errorf("scenario: WAN link %d-%d given twice", k[0], k[1])
		}
		links[k] = true
	}
	return nil
}

// placeSites puts the nodes in their sites and joins the sites by their WAN
// links in the simulated network.
func (sc *Scenario) placeSites(net *sim.Network) error {
	for n, s := range sc.siteOf() {
		net.SetSite(n, int(s))
	}
	for _, w := range sc.WAN {
		l := sim.Link{Latency: w.Latency, Jitter: w.Jitter, Bandwidth: float64(w.Bandwidth), Queue: int(w.Queue)}
		if w.Loss != "" && w.Loss != "none" {
			m, err := ParseLoss(w.Loss)
			if err != nil {
				return fmt.Errorf("wan %d-%d: loss: %w", w.A, w.B, err)
			}
			l.Loss = m
		}
		net.WANLink(int(w.A), int(w.B), l)
	}
	return nil
}

// siteTexts are the site: and wan: values as the scenario file gives them,
// for Describe and Flags.
func (sc *Scenario) siteTexts() (sites, wans []string) {
	for _, s := range sc.Sites {
		sites = append(sites, fmt.Sprintf("%d=%s", s.Site, spans.Format(s.Nodes, ",", "%d", "%d-%d")))
	}
	for _, w := range sc.WAN {
		wans = append(wans, w.text)
	}
	return sites, wans
}

package udprun

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/udp"
)

// Real nodes that join groups through a membership service (`stacktool
// node`, `stacktool gms`, and a worker given --gms) share what is here:
// the service's node id from the spec, group names, and waiting for the
// first views. They all run on stack.Node and transport/udp, so every one
// of them uses udp.GroupAddr for its channels and they hear each other.

// Address-book bounds for nodes that learn addresses from traffic (see
// udp.Config.Learn): a node learns its peers and the service; the service
// learns every node it serves.
const (
	NodeLearn    = 4096
	ServiceLearn = 1 << 16
)

// ServiceOf is the node id of the membership service that spec's gms
// layer talks to (its service parameter, default filled in). The spec's
// bottom layer must be gms, or gms above a layer that must be the bottom
// one (auth): a real node joins groups through the service.
func ServiceOf(spec *compose.Spec) (event.NodeID, error) {
	n := len(spec.Layers)
	if n > 1 {
		if info, ok := compose.Lookup(spec.Layers[n-1].Name); ok && info.Bottom != "" {
			n--
		}
	}
	if n == 0 || spec.Layers[n-1].Name != "gms" {
		return event.NoNode, fmt.Errorf("spec %q does not end in gms: a real node needs gms at the bottom to join groups through the membership service", spec.String())
	}
	return serviceParam(spec.Layers[n-1].Given())
}

// DefaultService is the membership service's node id when no spec names
// one (gms's default service parameter).
func DefaultService() (event.NodeID, error) { return serviceParam(nil) }

func serviceParam(given map[string]string) (event.NodeID, error) {
	info, ok := compose.Lookup("gms")
	if !ok {
		return event.NoNode, fmt.Errorf("no gms layer registered")
	}
	p, err := compose.NewParams(info, given)
	if err != nil {
		return event.NoNode, fmt.Errorf("gms: %v", err)
	}
	return event.NodeID(p.Int("service")), nil
}

// ParseGroups maps comma-separated group names to group ids, in order and
// without repeats; names maps each id back to its name.
func ParseGroups(list string) (groups []event.GroupID, names map[event.GroupID]string, err error) {
	names = map[event.GroupID]string{}
	if list == "" {
		return nil, nil, fmt.Errorf("group name is empty")
	}
	for i, name := range strings.Split(list, ",") {
		g, err := event.GroupByName(name)
		if err != nil {
			return nil, nil, fmt.Errorf("group %d of %q: %v", i+1, shortList(list), err)
		}
		if other, dup := names[g]; dup && other != name {
			return nil, nil, fmt.Errorf("groups %q and %q map to the same id %v; rename one", other, name, g)
		}
		if _, dup := names[g]; !dup {
			groups = append(groups, g)
		}
		names[g] = name
	}
	return groups, names, nil
}

func shortList(s string) string {
	if len(s) > 40 {
		return s[:30] + "..." + s[len(s)-6:]
	}
	return s
}

// Views follows the views a node installs and says when it is a member of
// every group it asked for. View is called on the node goroutine (from
// stack.AppFuncs.OnView); the other methods from anywhere.
type Views struct {
	self event.NodeID
	mu   sync.Mutex
	want []event.GroupID
	in   map[event.GroupID]bool
	all  chan struct{}
	once sync.Once
}

// NewViews watches for self's membership of groups.
func NewViews(self event.NodeID, groups []event.GroupID) *Views {
	v := &Views{self: self, want: groups, in: map[event.GroupID]bool{}, all: make(chan struct{})}
	if len(groups) == 0 {
		v.once.Do(func() { close(v.all) })
	}
	return v
}

// View records an installed view.
func (v *Views) View(vi *event.ViewInfo) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.in[vi.Group] = vi.Has(v.self)
	for _, g := range v.want {
		if !v.in[g] {
			return
		}
	}
	v.once.Do(func() { close(v.all) })
}

// In says whether the last view of g lists the node.
func (v *Views) In(g event.GroupID) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.in[g]
}

// Join asks the node to join groups and waits until it is a member of all
// of them, ctx ends (its error) or wait passes.
func (v *Views) Join(ctx context.Context, nd *stack.Node, svc *net.UDPAddr, wait time.Duration) error {
	for _, g := range v.want {
		if err := nd.Join(g); err != nil {
			return err
		}
	}
	select {
	case <-v.all:
		return nil // joined already: that wins over a stop at the same time
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-v.all:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("membership service at %v did not answer within %v (is stacktool gms running there?)", svc, wait)
	}
}

// NewTransport opens the UDP transport of a node that finds its peers
// from their traffic: it knows only the service's address (svc, pinned)
// and learns the rest, up to learn addresses.
func NewTransport(self event.NodeID, listen, ifName string, port int, service event.NodeID, svc *net.UDPAddr, learn int) (*udp.Transport, error) {
	return udp.New(TransportConfig(self, listen, ifName, port, service, svc, learn), nil)
}

// TransportConfig is NewTransport's configuration, for a caller that
// changes it before udp.New (the worker's fan-out).
func TransportConfig(self event.NodeID, listen, ifName string, port int, service event.NodeID, svc *net.UDPAddr, learn int) udp.Config {
	cfg := udp.Config{Self: self, Listen: listen, Interface: ifName, MulticastPort: port, Learn: learn}
	if svc != nil {
		cfg.Book = map[event.NodeID]*net.UDPAddr{service: svc}
	}
	return cfg
}

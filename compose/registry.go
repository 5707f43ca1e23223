// Package compose turns specification strings such as
//
//	fifo : reliable(nak_delay=20ms) : lec(r=8, c=5) : gms
//
// into stacks. Layers register themselves (name, parameter schema,
// properties, role, constructor); compose never names a layer. Parse reads a
// spec, Check verifies it against the registry, the layers' properties and
// roles, and each layer's own constructor (Check builds every layer once, so
// it refuses exactly what Build refuses), Explain adds every parameter's
// effective value, and Build makes a fresh set of layers for one node.
package compose

import (
	"fmt"
	"sort"
	"sync"

	"github.com/layercast/layercast/internal/seqwin"
	"github.com/layercast/layercast/stack"
)

// Property is something a layer gives to the layers above it, or needs from
// the layers below it.
type Property string

// The properties layers give and need. A layer's needs must be given by some
// layer below it in the spec.
const (
	// Reliable: every message sent to a group is delivered to every member
	// that stays in the view (NAK recovery, or a complete recovery mechanism).
	Reliable Property = "reliable"
	// Sequenced: every data cast delivered up carries its number in its
	// sender's stream and where that stream starts for this node
	// (event.Event Seq and Start): the join floor, kept by the one layer
	// that gives this (reliable) and used by those above (fifo).
	Sequenced Property = "sequenced"
	// FIFO: per (group, sender), messages are delivered in send order.
	FIFO Property = "fifo"
	// Agreed: every member of a group delivers the group's messages in one
	// order, the same at every member (total order: Spread's hop, by Lamport
	// time stamp and site id, and ring, across the groups of its ring).
	Agreed Property = "agreed"
	// Safe: a message is delivered only once every member (every site, for
	// hop) is known to hold it (Spread 3.3); hop and ring give it with
	// safe=on (GivesIfOn).
	Safe Property = "safe"
	// Views: group views are installed as events (gms).
	Views Property = "views"
	// Regions: derived multi-group membership (QSM regions, Ricochet
	// neighbourhoods) is installed as events (gms).
	Regions Property = "regions"
	// ProbabilisticRecovery: most losses are repaired proactively (lec).
	ProbabilisticRecovery Property = "probabilistic-recovery"
	// FlowControl: senders are held to what receivers can take (mflow).
	FlowControl Property = "flow-control"
)

// GivesIfOn is a LayerInfo.GivesWith for a layer that gives props only when
// its Bool parameter param is on (hop and ring give Safe with safe=on).
func GivesIfOn(param string, props ...Property) func(Params) []Property {
	return func(p Params) []Property {
		if p.Bool(param) {
			return props
		}
		return nil
	}
}

// WindowSpread is a LayerInfo.Spread for a layer whose receivers track a
// sender's stream in a window of param sequence numbers past the first gap,
// rounded up to a power of two and at least 64 (seqwin's bitmaps), and drop
// what lies beyond to ask for it again.
func WindowSpread(param string) func(Params) (int, string) {
	return func(p Params) (int, string) {
		n := seqwin.PowerOfTwo(p.Int(param), 64)
		return n, fmt.Sprintf("%s=%s tracks %d per sender", param, p.Text(param), n)
	}
}

// Factory makes one fresh layer for one node from checked parameters. It is
// also where a layer refuses parameters that do not fit together (mflow's
// ack_thresh above its window): Check builds every layer once, so `check`
// and `run` apply the same rules, kept in one place.
type Factory func(p Params) (stack.Layer, error)

// Role says in which stacks a layer may stand.
type Role int

const (
	// MemberRole layers make up a group member's stack: every spec that
	// check, run and compare take. It is the zero value.
	MemberRole Role = iota
	// ServiceRole layers make up a service node's own stack (the membership
	// service's, for example) and never a member's: a member spec that names
	// one is refused, since no member would ever hear from it.
	ServiceRole
)

// LayerInfo is what a layer registers.
type LayerInfo struct {
	// Name is the name used in specs.
	Name string
	// Summary is two or three plain sentences: what the layer promises and
	// how it keeps the promise (shown by `stacktool layers`).
	Summary string
	// Params is the parameter schema, in display order.
	Params []Param
	// Needs must be given by layers below this one.
	Needs []Property
	// Gives are provided to the layers above.
	Gives []Property
	// GivesWith, if set, names the properties the layer gives beyond Gives
	// only with some parameter values (ring gives safe delivery with
	// safe=on): a spec needing one is checked against the layer's
	// effective parameters.
	GivesWith func(p Params) []Property
	// New builds the layer.
	New Factory
	// Role says whether the layer belongs in a member's stack (the default)
	// or only in a service node's own stack.
	Role Role
	// Properties describes, in words that fit "needs ... below it", the
	// properties this layer introduces beyond compose's own (a layer may
	// declare a new property without editing compose).
	Properties map[Property]string
	// Counters documents the counters the layer keeps, in display order
	// (`stacktool layers` prints them; a report finds the acknowledgement
	// and buffer counters by their roles).
	Counters []CounterDoc
	// Summarize, if set, turns the layer's counters at the end of a run into
	// ratios and notes for the report. It must be deterministic (no clock,
	// no dependence on map order). Only the layer's own package reads its
	// counter names.
	Summarize func(c Counters) Summary
	// Service, if set, says which service node a member running this layer
	// with these parameters needs (a run harness starts it).
	Service func(p Params) (ServiceNeed, error)
	// ServiceToo, if set, is the layer (a ServiceRole layer and its
	// parameters) that the membership service's own stack must run, at its
	// bottom, when a member's spec holds this one: the service has to
	// speak what this layer makes of the members' packets (auth's tags).
	// ServiceOf appends it to the spec the service layer names.
	ServiceToo func(p Params) Call
	// BufferBound, if set, is the most bytes the layer's buffer_peak
	// counter (BufferPeakRole) may reach on one node carrying load, given
	// the layer's parameters, and in words how that bound is made up: what
	// a soak checks every run's peak against (see NodeLoad).
	BufferBound func(p Params, load NodeLoad) (bytes int64, words string)
	// Tools are commands the layer adds to stacktool.
	Tools []Tool
	// Bottom, if set, says why the layer must be the bottom layer of a
	// stack (nothing below it): a spec placing it elsewhere is refused with
	// this reason.
	Bottom string
	// NotBelow maps a property to the reason no layer giving it may stand
	// below this one: a spec placing one there is refused with the reason.
	NotBelow map[Property]string
	// Spread, if set, is how many messages of one sender's stream the
	// layer may hand up ahead of the first it has not handed up yet (its
	// receive window, with the parameter that sets it in words): what a
	// layer above that puts a stream back in order must be able to hold.
	Spread func(p Params) (n int, words string)
	// FitSpread, if set, fits the layer to the Spread n of the nearest
	// layer below that has one: it returns the parameters with the bounds
	// the spec left at their defaults raised (Params.Fit) so the layer holds
	// n messages of one sender's stream while it waits for an earlier one,
	// and, when bounds the spec set still hold fewer, a note saying so. A
	// bound set lower is a choice (memory over completeness: the layer gives
	// up gaps past it and reports those messages lost); a default too low
	// would make the same loss a trap.
	FitSpread func(p Params, n int) (fitted Params, note string)
	// Hides maps a property given below to the reason this layer does not
	// pass it on to the layers above (lec hands up messages it rebuilt,
	// which carry no sequence number): a layer above needing it is refused
	// with the reason.
	Hides map[Property]string
}

var (
	regMu    sync.RWMutex
	registry = map[string]*LayerInfo{}
)

// NewIfValid is the end of a LayerInfo.New whose layer has a configuration
// with its own Check: cfg's error if it cannot work, else the layer mk
// makes from it.
func NewIfValid[C interface{ Check() error }, L stack.Layer](cfg C, mk func(C) L) (stack.Layer, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	return mk(cfg), nil
}

// Register adds a layer to the registry. It panics on a duplicate name or a
// schema error, since both are programming errors caught at start-up.
func Register(info LayerInfo) {
	regMu.Lock()
	defer regMu.Unlock()
	if info.Name == "" || info.New == nil {
		panic("compose: Register needs a name and a factory")
	}
	if _, dup := registry[info.Name]; dup {
		panic(fmt.Sprintf("compose: layer %q registered twice", info.Name))
	}
	for _, p := range info.Params {
		if _, err := p.parse(p.Default); err != nil {
			panic(fmt.Sprintf("compose: layer %q: default of %s: %v", info.Name, p.Name, err))
		}
	}
	for p, words := range info.Properties {
		if old, ok := propertyWords[p]; ok && old != words {
			panic(fmt.Sprintf("compose: layer %q describes property %q as %q, already described as %q", info.Name, p, words, old))
		}
	}
	for _, t := range info.Tools {
		if t.Name == "" || t.Run == nil {
			panic(fmt.Sprintf("compose: layer %q: a tool needs a name and a Run", info.Name))
		}
		for _, f := range t.Flags {
			if _, err := f.parse(f.Default); err != nil && !f.Required {
				panic(fmt.Sprintf("compose: layer %q: tool %q: default of --%s: %v", info.Name, t.Name, f.Name, err))
			}
		}
		for _, l := range registry {
			for _, o := range l.Tools {
				if o.Name == t.Name {
					panic(fmt.Sprintf("compose: layer %q: tool %q already added by layer %q", info.Name, t.Name, l.Name))
				}
			}
		}
	}
	for p, words := range info.Properties {
		propertyWords[p] = words
	}
	c := info
	registry[info.Name] = &c
}

// Lookup finds a registered layer.
func Lookup(name string) (*LayerInfo, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	l, ok := registry[name]
	return l, ok
}

// Layers returns every registered layer, sorted by name.
func Layers() []*LayerInfo {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]*LayerInfo, 0, len(registry))
	for _, l := range registry {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Param returns the schema entry for name, or nil.
func (l *LayerInfo) Param(name string) *Param {
	for i := range l.Params {
		if l.Params[i].Name == name {
			return &l.Params[i]
		}
	}
	return nil
}

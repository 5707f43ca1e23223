package compose

import (
	"errors"
	"fmt"
	"slices"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// Service is the membership service a spec's layers name
// (LayerInfo.Service), built: what a harness (the simulator's runs,
// package cluster) adds as one more node before the members join.
type Service struct {
	// Layer is the member layer that names the service (gms).
	Layer string
	// Need is what it asked for: the service's node id, spec and timings.
	Need ServiceNeed
	// Name is the service stack's top layer (gms_service).
	Name string
	// Entries are the service node's layers, built fresh.
	Entries []stack.Entry
}

// ServiceOf finds the service the spec's layers name (the first layer
// that names one), refuses a service id that is one of the members, and
// builds the service's own stack: the spec that layer names, above the
// layers the member's other layers ask the service to run too
// (LayerInfo.ServiceToo: auth_service under a member's auth). Errors say
// what is wrong in words.
func ServiceOf(sp *Spec, members []event.NodeID) (*Service, error) {
	ls, err := Explain(sp)
	if err != nil {
		return nil, err
	}
	need, l, err := ServiceNeedOf(ls)
	if err != nil {
		return nil, err
	}
	if need == nil {
		return nil, errors.New("the stack gives views but none of its layers names the service that installs them")
	}
	if slices.Contains(members, need.Node) {
		return nil, fmt.Errorf("%s's service id %v is one of the member nodes; choose another (%s(service=N)) or renumber the members",
			l.Info.Name, need.Node, l.Info.Name)
	}
	for i := range ls {
		if too := ls[i].Info.ServiceToo; too != nil {
			c := too(ls[i].Params)
			need.Spec += " : " + c.String()
		}
	}
	ssp, err := Parse(need.Spec)
	if err != nil {
		return nil, fmt.Errorf("the service's spec %q: %w", need.Spec, err)
	}
	entries, err := BuildService(ssp)
	if err != nil {
		return nil, fmt.Errorf("the service's spec %q: %w", need.Spec, err)
	}
	return &Service{Layer: l.Info.Name, Need: *need, Name: ssp.Layers[0].Name, Entries: entries}, nil
}

// ServiceNeedOf is what the first layer of a checked spec that names a
// service asks for, with that layer; nil if no layer names one.
func ServiceNeedOf(ls []Checked) (*ServiceNeed, *Checked, error) {
	for i := range ls {
		if need, err := ls[i].ServiceNeed(); need != nil || err != nil {
			return need, &ls[i], err
		}
	}
	return nil, nil, nil
}

// ServiceNeed is what the layer, with its effective parameters, asks of a
// run harness (LayerInfo.Service); nil if it names no service. An error
// names the layer.
func (c Checked) ServiceNeed() (*ServiceNeed, error) {
	if c.Info.Service == nil {
		return nil, nil
	}
	need, err := c.Info.Service(c.Params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Info.Name, err)
	}
	return &need, nil
}

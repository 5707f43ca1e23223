package gms

import (
	"fmt"
	"math"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

func init() {
	compose.Register(compose.LayerInfo{
		Name: "gms",
		Summary: "Group membership at the bottom of a node's stack: joins and leaves become requests to a " +
			"centralised membership service, heartbeats feed its failure detector, and the numbered group " +
			"views and the node's QSM region views and Ricochet regions it sends back go up as View and Regions events.",
		Params: []compose.Param{
			{Name: "service", Type: compose.Int, Default: fmt.Sprint(uint32(ServiceNode)), Doc: "node id of the membership service", Min: 1, Max: math.MaxUint32},
			{Name: "heartbeat", Type: compose.Duration, Default: DefaultHeartbeat.String(), Doc: "interval between heartbeats to the service", Min: 0.001, Max: 60},
			{Name: "fd_timeout", Type: compose.Duration, Default: DefaultFDTimeout.String(), Doc: "silence after which the service suspects this node and starts probing it", Min: 0.001, Max: 3600},
			{Name: "suspect_timeout", Type: compose.Duration, Default: "0s", Doc: "how long the service probes this node, once suspected, before it declares it failed and removes it (0: equal to fd_timeout); a crashed node is removed within fd_timeout + suspect_timeout + view_interval", Min: 0, Max: 3600},
			{Name: "retry", Type: compose.Duration, Default: DefaultRetry.String(), Doc: "wait for an acknowledgement before a join or leave request is sent again", Min: 0.001, Max: 60},
			{Name: "view_interval", Type: compose.Duration, Default: DefaultViewInterval.String(), Doc: "batching interval of the service the simulator starts for this stack (stacktool gms has its own flag)", Min: 0, Max: 3600},
		},
		Gives: []compose.Property{compose.Views, compose.Regions},
		New: func(p compose.Params) (stack.Layer, error) {
			cfg := Config{
				Service:   event.NodeID(p.Int("service")),
				Heartbeat: p.Duration("heartbeat"),
				FDTimeout: p.Duration("fd_timeout"),
				Retry:     p.Duration("retry"),

				SuspectTimeout: p.Duration("suspect_timeout"),

				ViewInterval: p.Duration("view_interval"),
			}
			if cfg.FDTimeout <= cfg.Heartbeat {
				return nil, fmt.Errorf("gms: fd_timeout %v must be longer than heartbeat %v", cfg.FDTimeout, cfg.Heartbeat)
			}
			return New(cfg), nil
		},
	})
	compose.Register(compose.LayerInfo{
		Name: "gms_service",
		Summary: "The membership service itself, alone in the stack of the membership server: it keeps every " +
			"group's members, detects failures from heartbeats, batches changes into new views at most once per " +
			"view_interval, and sends each affected node only its share of the change.",
		Params: []compose.Param{
			{Name: "view_interval", Type: compose.Duration, Default: DefaultViewInterval.String(), Doc: "shortest time between two view installations (changes in between are batched)", Min: 0, Max: 3600},
			{Name: "fd_timeout", Type: compose.Duration, Default: DefaultFDTimeout.String(), Doc: "silence before suspicion, for nodes whose heartbeats declare none", Min: 0.001, Max: 3600},
			{Name: "suspect_timeout", Type: compose.Duration, Default: "0s", Doc: "probing of a suspect before its removal, for nodes whose heartbeats declare none (0: equal to fd_timeout)", Min: 0, Max: 3600},
		},
		Role: compose.ServiceRole, // the membership server's stack, never a member's
		New: func(p compose.Params) (stack.Layer, error) {
			return NewServiceLayer(ServiceConfig{ViewInterval: p.Duration("view_interval"), FDTimeout: p.Duration("fd_timeout"), SuspectTimeout: p.Duration("suspect_timeout")}), nil
		},
	})
}

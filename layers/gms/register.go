package gms

import (
	"fmt"
	"math"
	"time"

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
			{Name: "suspect_timeout", Type: compose.Duration, Default: "0s", Doc: "how long the service probes this node, once suspected, directly and through other members, before it declares it failed and removes it (0: equal to fd_timeout); a crashed node is removed within fd_max + suspect_timeout + view_interval", Min: 0, Max: 3600},
			{Name: "phi", Type: compose.Float, Default: fmt.Sprint(DefaultPhi), Doc: "accrual failure detector (Hayashibara et al. 2004, as in Akka and Cassandra): the service learns this node's heartbeat inter-arrival times and suspects it once a silence is that unlikely, phi = -log10 P(a heartbeat this late); fd_timeout is the floor, fd_max the ceiling (0: off, fd_timeout alone)", Min: 0, Max: maxPhi},
			{Name: "fd_max", Type: compose.Duration, Default: "0s", Doc: "the longest silence before suspicion however jittery the heartbeats, the ceiling of phi's window (0: 2 x fd_timeout)", Min: 0, Max: 3600},
			{Name: "indirect", Type: compose.Int, Default: fmt.Sprint(DefaultIndirect), Doc: "members the simulator's membership service asks to probe a suspect for it (SWIM ping-req): a suspect one of them reaches is kept, cut off from the service only, up to twice its window + suspect_timeout (0: none)", Min: 0, Max: 64},
			{Name: "retry", Type: compose.Duration, Default: DefaultRetry.String(), Doc: "wait for an acknowledgement before a join or leave request is sent again", Min: 0.001, Max: 60},
			{Name: "view_interval", Type: compose.Duration, Default: DefaultViewInterval.String(), Doc: "the view_interval the simulator gives the membership service it starts for this stack (the harness builds that service as gms_service(view_interval=..., fd_timeout=..., suspect_timeout=...) from this layer's values; stacktool gms has its own flag); the member layer itself does not use it", Min: 0, Max: 3600},
		},
		Gives:    []compose.Property{compose.Views, compose.Regions},
		Counters: compose.CountersOf(counters{}),
		Service:  serviceNeed,
		New: func(p compose.Params) (stack.Layer, error) {
			cfg := Config{
				Service:   event.NodeID(p.Int("service")),
				Heartbeat: p.Duration("heartbeat"),
				FDTimeout: p.Duration("fd_timeout"),
				Retry:     p.Duration("retry"),

				SuspectTimeout: p.Duration("suspect_timeout"),

				ViewInterval: p.Duration("view_interval"),

				Phi:   p.Float("phi"),
				FDMax: p.Duration("fd_max"),
			}
			if cfg.Phi == 0 {
				cfg.Phi = -1 // off
			}
			if cfg.FDTimeout <= cfg.Heartbeat {
				return nil, fmt.Errorf("gms: fd_timeout %v must be longer than heartbeat %v", cfg.FDTimeout, cfg.Heartbeat)
			}
			if cfg.FDMax != 0 && cfg.FDMax < cfg.FDTimeout {
				return nil, fmt.Errorf("gms: fd_max %v must be at least fd_timeout %v (it is the ceiling of the adaptive window, fd_timeout its floor)", cfg.FDMax, cfg.FDTimeout)
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
			{Name: "indirect", Type: compose.Int, Default: fmt.Sprint(DefaultIndirect), Doc: "members asked to probe a suspect for the service (SWIM ping-req); a suspect one of them reaches is kept, cut off from the service only, up to twice its window + suspect timeout (0: none)", Min: 0, Max: 64},
		},
		Role: compose.ServiceRole, // the membership server's stack, never a member's
		Counters: append(compose.CountersOf(serviceCounters{}),
			compose.CounterDoc{Name: "crash_removals", Kind: compose.Gauge, Doc: "crashes whose removal the simulator harness observed (set by the harness, not the service)"},
			compose.CounterDoc{Name: "crash_removal_max_us", Kind: compose.Peak, Doc: "longest time, in microseconds, from a crash until every surviving member held views without the node (set by the harness)"},
		),
		New: func(p compose.Params) (stack.Layer, error) {
			indirect := int(p.Int("indirect"))
			if indirect == 0 {
				indirect = -1 // none
			}
			return NewServiceLayer(ServiceConfig{ViewInterval: p.Duration("view_interval"), FDTimeout: p.Duration("fd_timeout"), SuspectTimeout: p.Duration("suspect_timeout"), Indirect: indirect}), nil
		},
	})
}

// serviceNeed says which membership service a member with these parameters
// talks to: the node gms(service=N), running gms_service with the member's
// view_interval, fd_timeout and suspect_timeout.
func serviceNeed(p compose.Params) (compose.ServiceNeed, error) {
	vi, fd, st := p.Duration("view_interval"), p.Duration("fd_timeout"), p.Duration("suspect_timeout")
	eff := st
	if eff == 0 {
		eff = fd
	}
	// A crashed node is suspected after its window (fd_timeout, longer
	// for jittery heartbeats with phi on, at most fd_max).
	window, words := fd, "fd_timeout"
	if p.Float("phi") > 0 {
		window, words = p.Duration("fd_max"), "fd_max"
		if window == 0 {
			window, words = 2*fd, "fd_max (2 x fd_timeout)"
		}
	}
	return compose.ServiceNeed{
		Node:         event.NodeID(p.Int("service")),
		Spec:         fmt.Sprintf("gms_service(view_interval=%v, fd_timeout=%v, suspect_timeout=%v, indirect=%d)", vi, fd, st, p.Int("indirect")),
		Poll:         max(time.Millisecond, vi/4),
		Describe:     fmt.Sprintf("view_interval %v, fd_timeout %v, heartbeat %v", vi, fd, p.Duration("heartbeat")),
		RemovalBound: window + eff + vi,
		RemovalWords: fmt.Sprintf("%s %v + suspect_timeout %v + view_interval %v", words, window, eff, vi),
	}, nil
}

// counters are what the member layer counts: its registration documents them
// from these tags (compose.CountersOf) and Init binds them
// (stack.Context.BindCounters).
type counters struct {
	Heartbeats      *stack.Counter `counter:"heartbeats_sent" doc:"heartbeats sent to the service"`
	Requests        *stack.Counter `counter:"requests_sent" doc:"join and leave requests sent"`
	Retries         *stack.Counter `counter:"request_retries" doc:"join and leave requests sent again for want of an acknowledgement"`
	Updates         *stack.Counter `counter:"updates_received" doc:"view updates received from the service"`
	ViewsInstalled  *stack.Counter `counter:"views_installed" doc:"group views installed (View events sent up)"`
	RemovedRejoined *stack.Counter `counter:"removed_rejoined" doc:"times the service had removed this node and it joined its groups again"`
	Malformed       *stack.Counter `counter:"malformed" doc:"packets from the service that did not decode"`
	FullUpdates     *stack.Counter `counter:"full_updates" doc:"full state updates asked for after a gap in the service's updates"`
	Probes          *stack.Counter `counter:"probes_answered" doc:"probes of a suspecting service answered"`
	Refused         *stack.Counter `counter:"joins_refused" doc:"joins the service refused (bounds)"`
	Suspects        *stack.Counter `counter:"suspects_reported" doc:"nodes a layer above reported unreachable (hop's dead links), passed on to the service"`
	Cuts            *stack.Counter `counter:"cuts_reported" doc:"reports by a layer above of far sites its links cut off for good (hop's dead sites), passed on to the service, which removes the smaller side"`
	Pings           *stack.Counter `counter:"pings_sent" doc:"indirect probes: pings sent to a node the service suspects, at its request"`
	PingsAnswered   *stack.Counter `counter:"pings_answered" doc:"pings from other members (probing this node for the service) answered"`
	AliveReported   *stack.Counter `counter:"alive_reported" doc:"suspects this node reached for the service (their ping answers, passed on)"`
}

// serviceCounters are what the service layer counts: its registration
// documents them from these tags (compose.CountersOf) and Init binds them
// (stack.Context.BindCounters). Each is set from the Service's Stats.
type serviceCounters struct {
	Views     *stack.Counter `counter:"views_installed" kind:"gauge" doc:"views the service has installed, over all groups"`
	Updates   *stack.Counter `counter:"node_updates" doc:"updates sent to nodes"`
	Failed    *stack.Counter `counter:"nodes_failed" doc:"nodes declared failed and removed"`
	Malformed *stack.Counter `counter:"malformed" doc:"packets that did not decode"`
	Packets   *stack.Counter `counter:"packets_sent" doc:"packets the service sent"`
	Suspected *stack.Counter `counter:"nodes_suspected" doc:"nodes suspected after fd_timeout of silence"`
	Cleared   *stack.Counter `counter:"suspicions_cleared" doc:"suspected nodes that answered a probe in time"`
	Probes    *stack.Counter `counter:"probes_sent" doc:"probes sent to suspected nodes"`
	Resets    *stack.Counter `counter:"nodes_told_to_rejoin" doc:"removed nodes that spoke and were told to join again"`
	Refused   *stack.Counter `counter:"refused_by_bounds" doc:"joins refused because a group or the service was full"`
	Clamped   *stack.Counter `counter:"timeouts_clamped" doc:"timeouts declared by nodes that were out of range and clamped"`
	Late      *stack.Counter `counter:"nodes_late" doc:"nodes silent past fd_timeout but inside the window their jittery heartbeats earned (phi): not suspected yet"`
	PingReqs  *stack.Counter `counter:"ping_requests" doc:"requests to members to probe a suspect for the service (indirect probes)"`
	Vouched   *stack.Counter `counter:"suspects_reached" doc:"reports from members that they reached a suspect the service could not hear"`
	Parted    *stack.Counter `counter:"nodes_partitioned" doc:"nodes removed while members still reached them: cut off from the service (counted in nodes_failed too)"`
	Left      *stack.Counter `counter:"nodes_left" doc:"nodes removed because they said goodbye"`
	Restarted *stack.Counter `counter:"nodes_restarted" doc:"nodes whose previous life was removed when a new one spoke"`
	CutOff    *stack.Counter `counter:"nodes_cut_off" doc:"nodes removed because a member's wide-area links cut their site off and theirs was the smaller side"`
	CutKept   *stack.Counter `counter:"cut_reports_ignored" doc:"reports of sites cut off that removed nobody (the reporter's side the smaller, or the reporter not in a group or suspected)"`
}

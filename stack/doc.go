// Package stack is the runtime every layercast protocol runs in: the Layer
// interface, the per-layer Context, the steppable Stack, the Transport below
// it, and the application API above it.
//
// A Stack is one node's protocol stack and serves every group the node is
// in. It is a state machine like raft's RawNode: the caller feeds it input
// and it runs every layer's reaction to completion before returning.
//
//	st, _ := stack.New(stack.Config{Self: 1, Layers: layers, Transport: tr, Clock: clk, App: app})
//	st.InstallView(view)          // or a gms layer produces views itself
//	st.Cast(group, payload)       // application input (ErrBackpressure: wait for App.Flow)
//	st.Receive(packet)            // a packet from the network
//	for {                         // timers
//		wait until st.Next()
//		st.Tick()
//	}
//
// The simulator (transport/sim) drives many stacks this way from one
// goroutine in virtual-time order, so runs repeat exactly from a seed. On a
// real network, Node (node.go) wraps one Stack in a goroutine that feeds it
// from sockets, a real clock and application calls.
//
// Inside a step, events move between layers through two queues: control
// (views, timers, acks, naks, tokens, and packets marked Control) is always
// taken before data (QSM 2006, section 3), except on the way out of the
// top: the application gets the top layer's events in the order it passed
// them up (a view after the deliveries queued before it; Block and Unblock
// through BlockReporter). Application sends wait in a
// bounded queue and are pulled into the top layer only when the transport
// can take more (a Pacer says so), so nothing stale queues behind data and
// overload becomes back-pressure, not growth.
//
// Messages a stack makes (application payloads, packets received,
// Context.NewMessage) reserve the headroom its layers declare (HeaderSizer)
// plus the frame, so headers are prepended in place.
//
// A layer that sends on its own schedule registers a Feed (Context.NewFeed)
// and builds its packet when the stack pulls it; a multi-group layer names
// extra multicast channels (Context.Channel: a QSM region's, a Spread
// site's), subscribes to them, and casts on one by setting Event.Channel.
//
// Writing a layer: embed Base, override Up and Down, make timers with
// Context.NewTimer (handles the layer keeps and re-arms), and register a
// factory with compose.Register from the layer's package. A layer never
// blocks, starts goroutines, reads the real clock or does I/O; it uses its
// Context for all of that.
package stack

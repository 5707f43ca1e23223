package stack

import (
	"fmt"
	"math/rand/v2"

	"github.com/layercast/layercast/event"
)

// Context is a layer's only window on the world: passing events on, timers,
// the clock, a seeded random source, counters and a logger. One per layer.
type Context struct {
	st    *Stack
	idx   int
	name  string
	rng   *rand.Rand
	names []string
	ctrs  []*Counter
}

// Name is the layer's registered name.
func (c *Context) Name() string { return c.name }

// Self is the node this stack runs on.
func (c *Context) Self() event.NodeID { return c.st.self }

// Site is the Spread site the node was placed in (stack.Config.Site; 0 when
// the runner placed it nowhere).
func (c *Context) Site() event.SiteID { return c.st.site }

// Up passes ev to the layer above (or the application). The event is copied;
// its Message now belongs to the receiver.
func (c *Context) Up(ev *event.Event) { c.st.enqueue(c.idx-1, dirUp, ev) }

// Down passes ev to the layer below (or the network).
func (c *Context) Down(ev *event.Event) { c.st.enqueue(c.idx+1, dirDown, ev) }

// Now is the stack's current time.
func (c *Context) Now() event.Time { return c.st.now }

// NewTimer makes a timer that calls fn when it expires. The timer starts
// stopped; arm it with Reset or ResetAt. Make timers once (in Init, or when
// the state they serve is created) and reuse them: re-arming allocates
// nothing. A nil fn makes a timer that fires into nothing.
func (c *Context) NewTimer(fn func()) *Timer {
	if fn == nil {
		fn = func() {}
	}
	return &Timer{q: &c.st.timers, fn: fn, hidx: -1}
}

// NewFeed makes a feed (feed.go): pull is called when the feed is Ready and
// the transport has room, control feeds before data feeds. pull builds at
// most one packet, just in time, and passes it down with Down; it returns
// whether it has more to send (the feed stays ready). Make feeds once and
// reuse them: Ready allocates nothing.
func (c *Context) NewFeed(control bool, pull func() bool) *Feed {
	return &Feed{st: c.st, pull: pull, control: control}
}

// Channel names the multicast channel of the given kind and id (a QSM
// region's, a Spread site's). Subscribe to receive it; cast on it by setting
// Event.Channel on a Cast going down. Which channels exist is the layer's
// (membership's) decision; how they reach the network is the transport's.
func (c *Context) Channel(kind event.ChannelKind, id uint32) event.ChannelID {
	return event.Channel(kind, id)
}

// Subscribe makes the node receive channel ch; packets multicast on it
// arrive as Casts of the group their frame names. It returns ErrNoChannels
// if the transport carries only groups' channels. Subscribing twice is
// harmless; the stack unsubscribes on Close.
func (c *Context) Subscribe(ch event.ChannelID) error { return c.st.subscribe(ch) }

// Unsubscribe stops receiving ch.
func (c *Context) Unsubscribe(ch event.ChannelID) error { return c.st.unsubscribe(ch) }

// Rand is the layer's random source, seeded from the stack's seed, the node
// and the layer's position: the same seed gives the same draws.
func (c *Context) Rand() *rand.Rand { return c.rng }

// Counter returns the layer's counter of that name, creating it at zero. Keep
// the pointer: looking it up again costs a search. Counters appear in run
// reports under the layer's name. By convention "peak_buffer_bytes" is the
// most bytes the layer held at once.
func (c *Context) Counter(name string) *Counter {
	for i, n := range c.names {
		if n == name {
			return c.ctrs[i]
		}
	}
	ctr := &Counter{}
	c.names = append(c.names, name)
	c.ctrs = append(c.ctrs, ctr)
	return ctr
}

// Logf logs a line prefixed with time, node and layer, if the stack has a
// logger.
func (c *Context) Logf(format string, args ...any) {
	if c.st.log == nil {
		return
	}
	c.st.log(fmt.Sprintf("%v %v %s: %s", c.st.now, c.st.self, c.name, fmt.Sprintf(format, args...)))
}

// Logging reports whether Logf goes anywhere (to skip building arguments).
func (c *Context) Logging() bool { return c.st.log != nil }

// NewMessage returns an empty pooled message with the stack's headroom (room
// for every layer's header and the frame; SetPayload keeps it).
func (c *Context) NewMessage() *event.Message { return c.st.pool.GetRoom(c.st.room) }

// MessageFrom returns a pooled message holding a copy of b, with the stack's
// headroom.
func (c *Context) MessageFrom(b []byte) *event.Message {
	return c.st.pool.FromBytesRoom(b, c.st.room)
}

// Pool is the stack's message pool. Its Get reserves the default
// event.Headroom, not the stack's: prefer NewMessage and MessageFrom.
func (c *Context) Pool() *event.Pool { return c.st.pool }

// Counter is a metric a layer keeps: a count or, with Set and Max, a gauge.
type Counter struct{ v int64 }

// Add adds d.
func (c *Counter) Add(d int64) { c.v += d }

// Inc adds one.
func (c *Counter) Inc() { c.v++ }

// Set sets the value.
func (c *Counter) Set(v int64) { c.v = v }

// Max raises the value to v if v is larger.
func (c *Counter) Max(v int64) {
	if v > c.v {
		c.v = v
	}
}

// Value reads it.
func (c *Counter) Value() int64 { return c.v }

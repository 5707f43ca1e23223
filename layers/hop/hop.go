// Package hop is Spread's wide-area layer (Amir and Stanton, "The Spread
// Wide Area Group Communication System", sections 3.1 to 3.3): the Hop link
// protocol between site representatives, per-site dissemination trees with
// pruning, and agreed delivery by Lamport time stamp across sites.
//
// Every node runs hop. A node's application casts go down, with a hop
// header, into its site: the site's representative (the smallest live node
// of the site view) numbers every site-origin message (site sequence and a
// Lamport time stamp), casts it numbered on the site channel (ring below
// gives it reliable total order inside the site) and sends it over Hop links
// (unicast Sends to far representatives) along the source site's
// shortest-path tree. A representative that receives a packet from the wide
// area forwards it to its children links at once, even when earlier ones are
// missing, and casts it into its own site. Links below which no site has a
// member of the packet's group get a small skip record instead of the data,
// so each site's stream stays contiguous everywhere.
//
// Each link (Figure 3.2) numbers its packets, acknowledges with link_aru and
// the highest seq sent, nacks gaps after a short timer and again while they
// remain, declares itself down past max_retries requests for one seq (or
// after dead_after of silence), and paces its sends with a token bucket and
// a sliding window (of a few packets only until the far end first answers:
// a far representative may learn it is one seconds after this end does).
//
// A dead link is a link, not a site. Heartbeats carry the links their
// site's representative declared down, and every site computes its trees
// over the links still up (the same link state gives the same trees
// everywhere), so a site whose direct link died is reached through others;
// what the new parent keeps it sends on. A site that no path of links
// reaches is reported to membership (a Suspect of its representative,
// which gms's service confirms by probing) and waited on for dead_after:
// membership decides (armCut). Only a site still cut off then is dead: it
// leaves the agreed order, and membership is asked to remove the smaller
// side of the split, which joins again (reportCut). A link declared down
// stays down until its far site's representative changes, or it answers a
// probe (probe.go).
//
// Delivery is in agreed order: by (time stamp, site id), once every live
// site's stream has passed the time stamp; idle sites send heartbeats. With
// safe=on a message also waits until the heartbeats' ARUs say every site's
// representative holds it. The layer measures what agreed order costs
// against FIFO (agreed_wait_ns: from the moment a message could have been
// delivered in FIFO order to its agreed delivery).
//
// A new representative (the old one failed) goes on with the site's stream
// where the old one's numbered casts left it; members cast again what the
// old one never numbered, and every node keeps every message until all
// sites hold it, so a new child link gets what its site lacks
// (failover.go). Sites come from the neighbourhood's site views (gms, or
// the harness's static ones); without them a node's site is every member
// of its groups, as ring assumes.
package hop

import (
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/ring"
	"github.com/layercast/layercast/internal/wirecodec"
	"github.com/layercast/layercast/stack"
)

// Config are the layer's settings.
type Config struct {
	// Links is the static topology: "A-B[:W],..." ("" is a full mesh).
	Links string
	// LinkRate is each link's token rate in bytes per second; Bucket the
	// most bytes of tokens a link saves up.
	LinkRate, Bucket int64
	// Window bounds the packets a link has sent and not seen acknowledged.
	Window int
	// NackDelay is the wait before the first nack of a gap; NackRetry the
	// wait between nacks while losses remain.
	NackDelay, NackRetry time.Duration
	// MaxRetries is how many times one seq may be requested before the far
	// end is declared dead.
	MaxRetries int
	// AckShort is the delay of the ack after the first packet since the
	// last ack; AckLong the period of acks; AckEvery the packets sent or
	// received between acks at most.
	AckShort, AckLong time.Duration
	AckEvery          int
	// Heartbeat is the period of time stamp heartbeats (and of flushing
	// skip records).
	Heartbeat time.Duration
	// DeadAfter is how long a link may hear nothing before the far site is
	// declared dead.
	DeadAfter time.Duration
	// MaxQueue is the link queue at which the application is held off
	// (at a quarter of it; it resumes at an eighth). Link queues hold at
	// most MaxPending packets.
	MaxQueue int
	// MaxPending bounds the out-of-order messages held per source site.
	MaxPending int
	// Safe delivers a message only once every site's representative is
	// known to hold it (safe delivery), still in agreed order.
	Safe bool
	// History is how long a node keeps a message at least, even once
	// every live site holds it, for a site or member admitted meanwhile
	// (state transfer, state.go).
	History time.Duration
	// HistoryBytes bounds what History keeps: past it, messages every
	// live site holds are freed however young (a flood of messages, forged
	// or not, must not grow memory for a second's worth of traffic).
	HistoryBytes int64
}

// Check reports a configuration that cannot work.
func (c Config) Check() error {
	if _, err := parseLinks(c.Links); err != nil {
		return err
	}
	switch {
	case c.Bucket < 2048:
		return fmt.Errorf("hop: bucket %d bytes cannot hold one packet (at least 2KB)", c.Bucket)
	case c.LinkRate <= 0:
		return fmt.Errorf("hop: link_rate must be positive")
	case c.Window < 1 || c.Window&(c.Window-1) != 0:
		return fmt.Errorf("hop: window %d must be a power of two", c.Window)
	case c.MaxPending < 1 || c.MaxPending&(c.MaxPending-1) != 0:
		return fmt.Errorf("hop: max_pending %d must be a power of two", c.MaxPending)
	case c.DeadAfter <= c.AckLong:
		return fmt.Errorf("hop: dead_after %v must be longer than ack_long %v, or every quiet link dies", c.DeadAfter, c.AckLong)
	case c.MaxQueue < 4:
		return fmt.Errorf("hop: max_queue must be at least 4")
	}
	return nil
}

// Layer is one node's hop.
type Layer struct {
	stack.Base
	cfg   Config
	edges []edge
	codec *wirecodec.Codec

	me     event.SiteID
	views  map[event.GroupID]*event.ViewInfo
	siteOf map[event.NodeID]event.SiteID
	reps   [maxSite + 1]event.NodeID
	peers  bool   // my site has other live members
	live   uint64 // sites in the view, minus those declared dead
	inView uint64
	dead   uint64
	isRep  bool
	routes routes
	// downs is the link state: the links each site's representative
	// declared down (its heartbeats carry it), mine in downs[me].
	downs downs
	links [maxSite + 1]*link

	heldBytes int64 // payload bytes held: links, kept messages
	keptCost  int64 // what the kept messages cost in memory (event.HeldCost each)

	clock   uint64 // Lamport clock
	siteSeq uint32 // last site sequence assigned (representative)
	held    bool
	// belowHeld: groups ring below holds the application off in.
	belowHeld map[event.GroupID]bool
	// heldIn: the groups hop told the application it is held off in
	// (flow), which it tells again when it lets it go; appGroups: the
	// groups the application cast in or this node's views held it in
	// (held off in while this node is in none of their views).
	heldIn    map[event.GroupID]bool
	appGroups map[event.GroupID]bool

	streams [maxSite + 1]*stream
	// last: the time stamp and site of the last message delivered (or
	// dropped as late): agreed order delivers nothing before it.
	last item
	// outOfGroups: this node is in none of its groups' views (membership
	// removed it): what it delivers reaches no application, and does not
	// move last.
	outOfGroups bool
	// upTo: of each source site, the site sequence and stamp of the last
	// message this node delivered, kept when the stream is closed (its
	// site left this node's view, or this node was cut off and
	// readmitted): a stream opened again may be started below it, and
	// what it delivered in its earlier life it must not deliver again.
	upTo [maxSite + 1]struct {
		seq uint32
		lts uint64
	}
	// rejoin: this representative was cut off from its site and every
	// far site, and is readmitted; what it numbered alone is of a
	// configuration nobody else was in, and its members went on numbering
	// the site's stream meanwhile. It numbers nothing until a member
	// tells it where the stream stands (rejoined, state.go).
	rejoin bool
	// alone: this node's view has had no far site since one had.
	alone bool
	// ringUp: since rejoin was set, my site's ring has carried a cast
	// (at rejoinAt). Before, no member's word can reach this node: a
	// readmission makes a new ring, which recovers the old one first, and
	// a member's views are held up below meanwhile (a crashed member
	// holds them up until membership removes it), so the wait for a
	// member runs from then, not from the readmission.
	ringUp   bool
	rejoinAt event.Time
	// voidLTS: the clock when rejoin was last set; what this node numbered
	// up to then that its site's ring hands back later is void.
	voidLTS uint64
	// aloneMark: where its site's stream stood (and its stamp) when this
	// node first numbered a message in a view with neither a member nor
	// a far site (rollBackAlone); set says it did.
	aloneMark struct {
		set bool
		seq uint32
		lts uint64
		// last: the last message delivered then (agreed order's floor,
		// last); what it delivered alone sorts after it (restoreLast).
		last struct {
			lts  uint64
			site event.SiteID
		}
	}
	// isoMark: agreed order's floor (last) when this node's live sites
	// last lost every far site (dead or gone from the view); restored if
	// this node is then removed (isolate).
	isoMark struct {
		set  bool
		lts  uint64
		site event.SiteID
	}
	// isoTop: agreed order's floor before isolate lowered it, and each
	// group's first view that has this node again (install): a message
	// cast in an earlier view that sorts before it is late (staleOld),
	// though the lowered floor lets it by.
	isoTop struct {
		set   bool
		lts   uint64
		site  event.SiteID
		views map[event.GroupID]uint32
	}
	// solo: this node numbered messages with no member in its view
	// (straight into its stream, never through its site's ring).
	solo     bool
	beatT    *stack.Timer
	lastBeat beat
	beatAt   event.Time
	// farBeat: the last heartbeat of each far site (representative),
	// cast into the site again every 10 heartbeats: relayed only when it
	// told something new, one lost in the site left a member's agreed
	// order waiting on an idle far site for good.
	farBeat [maxSite + 1]*beat
	// rejoinBeat: when each far site's heartbeat last said its
	// representative, readmitted, does not know where its stream stands
	// (no sequence, no stamp: rejoined); casts waiting on that stream's
	// stamps wait on while it says so (syncWaitEnd).
	rejoinBeat [maxSite + 1]event.Time
	farBeatAt  event.Time
	// arus[x][s]: up to which site sequence of source s site x holds
	// s's stream (from x's heartbeats).
	arus [maxSite + 1][maxSite + 1]uint32
	// holds (at a representative): each member's last word on what it
	// holds of the far streams (tHolds); lastHolds and holdsAt: what
	// this member last told, and when.
	holds     map[event.NodeID]*beat
	lastHolds beat
	holdsAt   event.Time

	// Failover (failover.go): this node's casts not yet seen numbered,
	// the highest origin number numbered per origin of my site, the
	// representative last known, and what a representative keeps until
	// stable.
	oseq     uint32
	own      ring.Ring[ownCast]
	numbered map[event.NodeID]uint32
	// delivered: of each origin of my site, the highest origin number
	// of its casts this node delivered. A readmitted representative takes
	// again the casts it numbered alone (rejoined), and must not deliver
	// them twice.
	delivered map[event.NodeID]uint32
	resync    map[event.NodeID]bool // members whose casts again are awaited (takeOver)
	// newcomers: members new to my site (joined, or removed and
	// readmitted) none of whose casts this node has taken yet. A node's
	// origin numbers never start over: they went on in its earlier life,
	// which this node may not have seen (alone, out of every view, it
	// numbers its own casts itself), so its first cast may be any number
	// past what this node numbered of it (takeCast).
	newcomers map[event.NodeID]bool
	// recasting: a member whose representative changed marks its casts
	// as cast again until it sees one numbered, so even with none to
	// cast again its first cast to the new one ends the wait (resync).
	recasting bool
	lastRep   event.NodeID
	// awaitRep: a representative new to my site that this member told
	// where the site's stream stands, or that this member, readmitted
	// alone, waits on to be told (rejoined), until its tStart comes. What it numbered of the site's stream before it
	// answered is void: a representative readmitted from a site cut off
	// whole had numbered it in the old configuration, its ring below sent
	// it in the new one (it waited there for the token), and it numbers
	// those numbers again from the member's tStart on; taken, the member
	// took the new ones as copies (spread-site-soak seed 59 at rate max,
	// 14 owed deliveries missing). A representative that was not
	// readmitted so answers with a replay (answerReplay) that holds what
	// it numbered meanwhile.
	awaitRep event.NodeID
	// toldRep: the representative this member told where its site's
	// stream stands (tellRep), since it became the representative.
	toldRep event.NodeID
	// A member's word on its site's stream (seen.go): at a member, up to
	// where its stream of its own site is contiguous, how many times it
	// tells it again, and whether seenT is set for such a repeat; at a
	// representative, what each member of its site said.
	seen       uint32
	seenLeft   int
	seenRepeat bool
	seenT      *stack.Timer
	seenBy     map[event.NodeID]uint32
	// sitePend: what this representative numbered and its site's ring
	// handed back, until its members say they hold it (seen.go).
	sitePend ring.Ring[kept]
	retained [maxSite + 1]ring.Ring[kept]
	// waiting are members' casts a representative took but numbers only
	// once its links and its site's ring are short again (failover.go).
	waiting  ring.Ring[kept]
	waitT    *stack.Timer // drains waiting casts after maxSyncWait
	draining bool

	// suspect: live sites no path of links reaches, reported to
	// membership, since cutAt; cutT ends the wait for its word (armCut).
	suspect uint64
	cutAt   [maxSite + 1]event.Time
	// repLacks (at a member): the sites in the view its representative's
	// last heartbeat had no stream of (dead to it, or out of its view).
	// A member finds a site dead once it has been cut off for dead_after
	// and its representative's word agrees: by its own clock alone, on
	// the representative's word on the links (heartbeats' Down), which
	// stops while that one is frozen, a member found the far sites dead
	// though they healed meanwhile, freed what they lacked of its site's
	// stream, took over with them dead, and dead sites stay dead while in
	// the view (splitfreeze seeds 469 and 329 at rate max: 241,795 and
	// 1,128,142 owed deliveries missing). By the word alone, a member
	// whose view was ahead of its representative's found sites dead
	// that the representative was about to readmit (seed 58: 22).
	repLacks uint64
	cutT     *stack.Timer
	// cutOff: the dead sites in the view this representative last asked
	// membership to remove, at cutSent (reportCut).
	cutOff  uint64
	cutSent event.Time

	// outAt[x][s]: where source s's stream stood here when site x left
	// the live sites (outSet[x]); a readmitted x is resent from there
	// (resend): members cast to it once their views had it back, which
	// may be before this node's did.
	outAt  [maxSite + 1][maxSite + 1]uint32
	outSet [maxSite + 1]bool
	// repNew[s]: the far sites whose representative changed since this
	// node last sent them s's stream (resend).
	repNew [maxSite + 1]uint64

	// behind: agreed order holds, since behindAt, on a message cast in a
	// view newer than this node's (viewBehind).
	behind   bool
	behindAt event.Time
	// ahead: per group, the first, in agreed order, of the messages this
	// node dropped because their site was not in its view though they
	// were cast in a view of their group newer than this node's (its
	// membership update comes late), since at: agreed order holds there
	// until this node's view of that group catches up, or dead_after
	// (viewAhead). Per group: view numbers of two groups do not compare.
	ahead map[event.GroupID]*aheadHold

	// openedAt: when each stream was opened here; waitAt: when this
	// representative last cast a stream again for a member that waits
	// on its tStart (answerWait).
	openedAt [maxSite + 1]event.Time
	waitAt   [maxSite + 1]event.Time

	// Probes of links declared down (probe.go).
	probeT [maxSite + 1]*stack.Timer
	// epochs numbers the lives of this node's links (link.epoch).
	epochs uint16
	// recvOf keeps, per far representative still in the view, the
	// receiving side of its last link closed here (link.close, newLink).
	recvOf map[event.NodeID]recvLife

	c counters
}

// New makes a layer from a checked configuration.
func New(cfg Config) *Layer {
	edges, _ := parseLinks(cfg.Links)
	return &Layer{cfg: cfg, edges: edges}
}

// HeaderSize is the most bytes hop prepends.
func (l *Layer) HeaderSize() int { return dataHdrSize }

// Init makes the counters and timers.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.codec = wirecodec.New(wirecodec.Options{Name: "hop", Malformed: errMalformed, MaxInitLen: 256})
	ctx.BindCounters(&l.c)
	l.me = ctx.Site()
	l.beatT = ctx.NewTimer(l.onBeat)
	l.waitT = ctx.NewTimer(l.checkHold)
	l.seenT = ctx.NewTimer(l.onSeen)
	l.cutT = ctx.NewTimer(l.rebuild)
	l.seenBy = map[event.NodeID]uint32{}
	l.numbered = map[event.NodeID]uint32{}
	l.delivered = map[event.NodeID]uint32{}
	l.resync = map[event.NodeID]bool{}
	l.newcomers = map[event.NodeID]bool{}
	l.ahead = map[event.GroupID]*aheadHold{}
	l.belowHeld = map[event.GroupID]bool{}
	l.heldIn = map[event.GroupID]bool{}
	l.appGroups = map[event.GroupID]bool{}
	l.holds = map[event.NodeID]*beat{}
	return nil
}

// Close releases every buffered message.
func (l *Layer) Close() {
	for i := range l.links {
		if l.links[i] != nil {
			l.links[i].close()
			l.links[i] = nil
		}
	}
	for i := range l.streams {
		if l.streams[i] != nil {
			l.streams[i].close()
			l.streams[i] = nil
		}
	}
	l.releaseKept()
}

// Down handles the application's casts and sends.
func (l *Layer) Down(ev *event.Event) {
	switch {
	case ev.Kind == event.Cast && ev.Peer == event.NoNode && ev.Msg != nil:
		l.originate(ev)
	case ev.Kind == event.Send && ev.Msg != nil:
		ev.Msg.Prepend(1)[0] = tPass
		l.Ctx.Down(ev)
	default:
		l.Ctx.Down(ev)
	}
}

// Up handles packets from below and membership.
func (l *Layer) Up(ev *event.Event) {
	switch ev.Kind {
	case event.Cast, event.Send:
		if ev.Msg == nil {
			return
		}
		l.receive(ev)
	case event.Regions:
		if ev.Regions != nil {
			l.install(ev.Regions)
		}
		l.Ctx.Up(ev)
	case event.HoldOff, event.Resume:
		// Ring below holds the application off and lets it go by its own
		// queue, hop by its links: the application is held while either
		// holds. Passed up as they came, ring's Resume let it go while
		// hop still held it (a representative cast at 12,000/s into links
		// of 250/s).
		held := ev.Kind == event.HoldOff
		if held == l.belowHeld[ev.Group] {
			return
		}
		if held {
			l.belowHeld[ev.Group] = true
		} else {
			delete(l.belowHeld, ev.Group)
		}
		if !l.held {
			l.Ctx.Up(ev)
		}
	default:
		l.Ctx.Up(ev)
	}
}

// install takes a new neighbourhood: group views, sites, representatives,
// links and routes.
func (l *Layer) install(nb *event.Neighbourhood) {
	l.views = nb.Views
	l.outOfGroups = true
	for g, v := range nb.Views {
		if v.Has(l.Ctx.Self()) {
			l.outOfGroups = false
			l.appGroups[g] = true
			if t := &l.isoTop; t.set && t.views[g] == 0 {
				t.views[g] = uint32(v.ID) // the view that readmits it
			}
		}
	}
	prevInView := l.inView
	prevRep := l.reps[l.me]
	prev := map[event.NodeID]bool{} // my site's members before
	for n, s := range l.siteOf {
		if s == l.me {
			prev[n] = true
		}
	}
	l.siteOf = map[event.NodeID]event.SiteID{}
	was := l.reps
	l.reps = [maxSite + 1]event.NodeID{}
	l.inView = 0
	l.peers = false
	sites := nb.Sites
	if len(sites) == 0 {
		// No sites known (nobody placed any): every node of my groups is
		// in my site, as ring below assumes too.
		sites = []event.SiteView{{Site: l.me, Members: []event.NodeID{l.Ctx.Self()}}}
		for _, v := range nb.Views {
			sites[0].Members = append(sites[0].Members, v.Members...)
		}
		slices.Sort(sites[0].Members)
		sites[0].Members = slices.Compact(sites[0].Members)
	}
	for i := range sites {
		sv := &sites[i]
		if sv.Site > maxSite || len(sv.Members) == 0 {
			l.c.Foreign.Inc()
			continue
		}
		l.inView |= 1 << sv.Site
		l.reps[sv.Site] = sv.Members[0]
		for _, m := range sv.Members {
			l.siteOf[m] = sv.Site
		}
		if sv.Site == l.me && len(sv.Members) > 1 {
			l.peers = true
		}
	}
	for n := range l.recvOf {
		if _, ok := l.siteOf[n]; !ok {
			// Gone from the view: when it is back, it numbers a new
			// life of the link from 1, and old packets may still come.
			delete(l.recvOf, n)
		}
	}
	l.dead &= l.inView // a dead site that left the view may come back
	for s := range l.reps {
		if l.reps[s] != was[s] {
			// A new representative (or none): its links are new, and
			// what the old one declared down is forgotten.
			l.downs[s] = 0
			for x := range l.downs {
				l.downs[x] &^= 1 << s
			}
			l.farBeat[s] = nil // the old one's: not cast into my site again
			for src := range l.repNew {
				l.repNew[src] |= 1 << s
			}
		}
	}
	for n := range l.numbered {
		if s, ok := l.siteOf[n]; !ok || s != l.me {
			delete(l.numbered, n) // gone from my site: back, it is a newcomer
			delete(l.resync, n)
		}
	}
	for n := range l.newcomers {
		if s, ok := l.siteOf[n]; !ok || s != l.me {
			delete(l.newcomers, n)
		}
	}
	for n, s := range l.siteOf {
		if s == l.me && !prev[n] && n != l.Ctx.Self() {
			l.newcomers[n] = true
		}
	}
	for n := range l.delivered {
		if s, ok := l.siteOf[n]; !ok || s != l.me {
			delete(l.delivered, n)
		}
	}
	for n := range l.holds {
		if s, ok := l.siteOf[n]; !ok || s != l.me {
			delete(l.holds, n)
		}
	}
	for n := range l.seenBy {
		if s, ok := l.siteOf[n]; !ok || s != l.me {
			delete(l.seenBy, n)
		}
	}
	l.rejoined(prev, prevInView, prevRep)
	l.rebuild()
	_ = l.Ctx.Subscribe(l.Ctx.Channel(event.SiteChannel, uint32(l.me)))
	for n, s := range l.siteOf {
		if s == l.me && !prev[n] && n != l.Ctx.Self() {
			// A newcomer in my site: it learns where each stream stands,
			// and gets what it needs of them (state.go).
			l.replaySite()
			break
		}
	}
}

// rebuild recomputes live sites, my role, links and routes.
func (l *Layer) rebuild() {
	wasLive := l.live
	l.live = l.inView &^ l.dead
	was := l.isRep
	l.isRep = l.reps[l.me] == l.Ctx.Self() && l.live&(1<<l.me) != 0
	if rep := l.reps[l.me]; rep != l.lastRep && l.lastRep != event.NoNode && l.lastRep != l.Ctx.Self() {
		l.dropUnheld() // seen.go
	}
	if l.isRep && !was {
		// Taking over from a representative that failed: go on with the
		// site's stream where its numbered casts left it (unless this
		// node does not know where that is: rejoined).
		if !l.rejoin {
			l.syncOwn()
		}
		if st := l.streams[l.me]; st != nil {
			l.siteSeq = max(l.siteSeq, st.contig)
			l.clock = max(l.clock, st.lastLTS)
		}
		for _, st := range l.streams {
			if st != nil {
				st.inSite = max(st.inSite, st.contig) // all it has came by the site's ring
			}
		}
		if l.lastRep != event.NoNode && l.lastRep != l.Ctx.Self() {
			l.takeOver()
		}
	}
	var before [maxSite + 1]uint64 // my children per source, before
	for src, cs := range l.routes.children {
		for _, c := range cs {
			before[src] |= 1 << c.site
		}
	}
	now := l.Ctx.Now()
	for {
		reach := l.routes.compute(l.edges, &l.downs, l.live, l.me)
		cut := l.live &^ reach
		if l.live&(1<<l.me) == 0 {
			cut = 0
		}
		l.suspect &= cut // reached again, or gone from the view
		// Sites no path of links that are up reaches: reported to
		// membership, which decides (armCut).
		var due uint64
		for s := event.SiteID(0); s <= maxSite; s++ {
			if cut&(1<<s) == 0 {
				continue
			}
			if l.suspect&(1<<s) == 0 {
				l.suspect |= 1 << s
				l.cutAt[s] = now
				if l.isRep {
					l.c.Dead.Inc()
					if l.Ctx.Logging() {
						l.Ctx.Logf("site %d (representative %v) cut off: no path of links up reaches it; reported to membership", s, l.reps[s])
					}
					l.Ctx.Down(&event.Event{Kind: event.Suspect, Peer: l.reps[s]})
				}
			}
			if now.Sub(l.cutAt[s]) >= l.cfg.DeadAfter && (l.isRep || l.repLacks&(1<<s) != 0) {
				due |= 1 << s
			}
		}
		if due == 0 {
			break
		}
		if l.Ctx.Logging() {
			l.Ctx.Logf("sites %#x dead: cut off for dead_after %v with their representatives still in the view", due, l.cfg.DeadAfter)
		}
		l.c.CutDead.Add(int64(bits.OnesCount64(due)))
		l.suspect &^= due
		l.dead |= due
		l.live &^= due
	}
	l.reportCut(now)
	l.armCut()
	if far := ^uint64(1 << l.me); l.live&far == 0 && wasLive&far != 0 && !l.isoMark.set {
		l.isoMark.set, l.isoMark.lts, l.isoMark.site = true, l.last.h.LTS, l.last.h.Site
	} else if l.live&far != 0 {
		l.isoMark.set = false
	}
	for x := event.SiteID(0); x <= maxSite; x++ {
		if wasLive&(1<<x) != 0 && l.live&(1<<x) == 0 && !l.outSet[x] {
			l.outSet[x] = true
			for src, st := range l.streams {
				if st != nil {
					l.outAt[x][src] = st.contig
				}
			}
		}
	}
	changed := false
	var gone [maxSite + 1]uint64 // my children per source, no longer
	for src, cs := range l.routes.children {
		var after uint64
		for _, c := range cs {
			after |= 1 << c.site
		}
		changed = changed || after != before[src]
		gone[src] = before[src] &^ after
	}
	if changed {
		l.c.Rebuilt.Inc()
	}
	nbr := uint64(0)
	if l.isRep {
		nbr = neighbours(l.edges, &l.downs, l.live, l.me)
	}
	for s := event.SiteID(0); s <= maxSite; s++ {
		lk := l.links[s]
		want := nbr&(1<<s) != 0
		if lk != nil && (!want || lk.peer != l.reps[s]) {
			lk.close()
			l.links[s], lk = nil, nil
		}
		if want && lk == nil {
			l.links[s] = newLink(l, s, l.reps[s])
			for src := range before {
				before[src] &^= 1 << s // a new link: send it what it lacks
			}
		} else if lk != nil {
			for src := range gone {
				if gone[src]&(1<<s) != 0 {
					// No longer its parent for src's stream: its new
					// parent sends it what it lacks (resend there), so
					// what waits here unsent would only cross the link
					// a second time.
					lk.unqueue(event.SiteID(src))
				}
			}
		}
		if l.live&(1<<s) != 0 {
			if l.streams[s] == nil {
				l.streams[s] = newStream(s, l.cfg.MaxPending)
				l.openedAt[s] = now
				if l.isRep && s != l.me && wasLive != 0 {
					l.castOpened(s) // not at the first view: no member is behind it
				}
			}
		} else if l.streams[s] != nil {
			l.streams[s].close()
			l.streams[s] = nil
		}
	}
	if l.isRep && !l.rejoin {
		l.syncOwn()
		if st := l.streams[l.me]; st != nil {
			l.siteSeq = max(l.siteSeq, st.contig)
		}
		for src, cs := range l.routes.children {
			for _, c := range cs {
				if before[src]&(1<<c.site) == 0 {
					l.resend(event.SiteID(src), c, wasLive&(1<<c.site) == 0)
				}
			}
		}
		if !was && l.solo && l.lastRep != event.NoNode && l.lastRep != l.Ctx.Self() {
			// Taking over: what this node holds of its site's stream
			// (and the far streams) its members may lack, when it
			// numbered some of it alone, in a view of its own that
			// nobody else was in (they reached the far sites on its new
			// links, never its site's ring): a member waited for good
			// on them (spread-site-soak seed 369, 602 owed missing).
			l.replaySite()
			l.solo = false
		} else if !was && l.lastRep != event.NoNode && l.lastRep != l.Ctx.Self() {
			// Taking over: a member the old representative admitted
			// but failed before it told it where each stream stands
			// waits for a tStart, and then for what this node got
			// past it before that member was in the ring (spread-site-
			// soak seed 317, 325 owed missing). The others stand where
			// this node does (ring gave every member the same): to
			// them it says nothing new. Not the whole replay: cast
			// before this node's first numbered casts, it held them in
			// the ring until a member crashed, and they were lost
			// (seed 21).
			for s, st := range l.streams {
				if st != nil {
					l.replay(event.SiteID(s), st.contig+1, l.castReplay)
				}
			}
		}
	}
	if !l.isRep || !l.rejoin {
		// Resent above (or not this node's to resend): a site live
		// again is out no more. A representative still rejoining keeps
		// the mark for its resend once it knows where it stands.
		for x := event.SiteID(0); x <= maxSite; x++ {
			if l.live&(1<<x) != 0 {
				l.outSet[x] = false
			}
		}
	}
	if was && !l.isRep {
		l.flushSite()
	}
	l.releaseSite()
	if rep := l.reps[l.me]; rep != l.lastRep {
		if l.lastRep != event.NoNode {
			l.repChanged()
		}
		l.lastRep = rep
	}
	if (l.isRep || l.peers) && !l.beatT.Pending() {
		l.beatT.Reset(l.cfg.Heartbeat)
	}
	l.checkHold() // links gone with a dead site no longer hold the application
	l.tryDeliver()
}

// interest is the mask of live sites with a member of g (all live sites when
// this node does not know g's view: conservative, as Spread is).
func (l *Layer) interest(g event.GroupID) uint64 {
	v := l.views[g]
	if v == nil {
		return l.live
	}
	var m uint64
	for _, n := range v.Members {
		if s, ok := l.siteOf[n]; ok {
			m |= 1 << s
		}
	}
	return m & l.live
}

// viewOf is the ID (low 32 bits) of this node's view of g, 0 if none.
func (l *Layer) viewOf(g event.GroupID) uint32 {
	if v := l.views[g]; v != nil {
		return uint32(v.ID)
	}
	return 0
}

// originate handles an application cast.
func (l *Layer) originate(ev *event.Event) {
	g := ev.Group
	if !l.appGroups[g] {
		l.appGroups[g] = true
		if l.held {
			l.holdIn(g) // a group hop did not know it casts in
		}
	}
	if l.outOfGroups {
		l.c.OutOfView.Inc()
	}
	l.clock++
	l.oseq++
	h := dataHdr{Type: tData, Site: l.me, Origin: l.Ctx.Self(), Last: l.oseq, LTS: l.clock, Mask: l.interest(g), View: l.viewOf(g)}
	if !l.isRep {
		if l.recasting {
			h.Flags = flagRecast // after its casts again (takeCast)
		}
		// The representative numbers it and sends it on; keep it until
		// then, for a new representative if this one fails.
		l.keepOwn(l.oseq, g, ev.Msg.Bytes())
		h.put(ev.Msg.Prepend(dataHdrSize))
		l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g, Channel: l.siteChannel(), Msg: ev.Msg})
		l.checkHold()
		return
	}
	if l.waiting.Len() > 0 || l.unsyncedFar() {
		// After the casts waiting before it, and the far streams' stamps
		// (numberOrWait).
		l.numbered[h.Origin] = max(l.numbered[h.Origin], h.Last)
		l.waiting.Push(kept{h: h, g: g, msg: ev.Msg, at: l.Ctx.Now()})
		l.armWait()
		l.checkHold()
		return
	}
	l.number(&h, g, ev.Msg)
	ev.Msg.Release()
}

// number gives a site-origin message its site sequence and time stamp
// (representative only), keeps it in the site's own stream, casts it into
// the site and sends it on along the site's tree. payload is not kept.
func (l *Layer) number(h *dataHdr, g event.GroupID, payload *event.Message) {
	l.clock = max(l.clock+1, h.LTS)
	l.siteSeq++
	h.Seq, h.LTS, h.LinkSeq, h.Flags = l.siteSeq, l.clock, 0, 0
	if h.Mask == 0 {
		h.Mask = l.interest(g)
	}
	l.numbered[h.Origin] = max(l.numbered[h.Origin], h.Last)
	l.retain(h, g, payload)
	if l.peers {
		// Into this node's stream and onto the links once ring hands it
		// back (fromSite): by then it is in the site's ring, so if this
		// node fails, a member that takes over has it. Sent on at once, a
		// far site could hold a number no survivor of the site knows, and
		// the new representative would give it to another message; taken
		// at once, this node could deliver it where the survivors, who
		// never get it, deliver another.
		l.castSite(h, g, payload)
	} else {
		l.solo = true
		if st := l.streams[l.me]; st != nil && !l.aloneMark.set && l.inView == 1<<l.me {
			l.aloneMark.set, l.aloneMark.seq, l.aloneMark.lts = true, st.contig, st.lastLTS
			l.aloneMark.last.lts, l.aloneMark.last.site = l.last.h.LTS, l.last.h.Site
		}
		l.takeNumbered(h, g, payload)
	}
	l.checkHold()
	l.tryDeliver()
}

// takeNumbered takes a message this node numbered into its site's stream and
// sends it on along the site's tree.
func (l *Layer) takeNumbered(h *dataHdr, g event.GroupID, payload *event.Message) {
	if st := l.streams[l.me]; st != nil {
		if h.Origin == l.Ctx.Self() {
			st.skip(h.Seq, h.Seq, h.LTS, l.Ctx.Now())
		} else {
			st.add(h, g, payload, l.Ctx.Now())
		}
	}
	l.forward(h, g, payload)
}

func (l *Layer) siteChannel() event.ChannelID {
	return l.Ctx.Channel(event.SiteChannel, uint32(l.me))
}

// castSite casts a numbered message (or skip, payload nil) into my site.
func (l *Layer) castSite(h *dataHdr, g event.GroupID, payload *event.Message) {
	if !l.peers {
		return
	}
	var m *event.Message
	if payload != nil {
		m = l.Ctx.MessageFrom(payload.Bytes())
	} else {
		m = l.Ctx.NewMessage()
	}
	hh := *h
	hh.LinkSeq, hh.Flags = 0, h.Flags&flagReplay
	hh.put(m.Prepend(dataHdrSize))
	// Not control: ring below orders skips with the data, reliably.
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g, Channel: l.siteChannel(), Msg: m})
}

// forward queues a message of source site h.Site on my children links in
// that site's tree: the data where the child's subtree wants it, a skip
// record elsewhere.
func (l *Layer) forward(h *dataHdr, g event.GroupID, payload *event.Message) {
	for _, c := range l.routes.children[h.Site] {
		lk := l.links[c.site]
		if lk == nil {
			continue
		}
		if payload != nil && h.Type == tData && h.Mask&c.subtree != 0 {
			lk.queue(h, g, payload)
		} else {
			if h.Type == tData {
				l.c.Pruned.Inc()
			}
			lk.queueSkip(h.Site, h.Seq, h.end(), h.LTS)
		}
	}
}

// receive parses a packet from below.
func (l *Layer) receive(ev *event.Event) {
	m := ev.Msg
	b, err := m.Peek(1)
	if err != nil {
		l.c.Malformed.Inc()
		m.Release()
		return
	}
	if ev.Kind == event.Send {
		if b[0] == tPass {
			_, _ = m.Consume(1)
			l.Ctx.Up(ev)
			return
		}
		if b[0] == tProbe {
			l.onProbe(ev.Peer, m.Bytes())
			m.Release()
			return
		}
		if b[0] == tSeen {
			l.onSeenIn(ev.Peer, m.Bytes())
			m.Release()
			return
		}
		lk := l.linkOf(ev.Peer)
		if lk == nil {
			l.c.Foreign.Inc()
			m.Release()
			return
		}
		lk.receive(ev)
		return
	}
	// A cast on the site channel (a tHolds, a control cast, passes by
	// ring: no sign the ring is up).
	if l.rejoin && !l.ringUp && b[0] != tHolds {
		l.rejoinHeard()
	}
	switch b[0] {
	case tData, tSkip, tStart:
		hb, err := m.Consume(dataHdrSize)
		var h dataHdr
		if err == nil {
			h, err = parseData(hb)
		}
		if err != nil || h.LinkSeq != 0 {
			l.c.Malformed.Inc()
			m.Release()
			return
		}
		l.fromSite(&h, ev.Group, ev.Peer, m)
	case tHolds:
		bt, err := parseBeatAs(m.Bytes(), tHolds)
		m.Release()
		if err != nil {
			l.c.Malformed.Inc()
			return
		}
		if l.isRep && ev.Peer != l.Ctx.Self() && l.siteOf[ev.Peer] == l.me {
			l.holds[ev.Peer] = &bt
			l.answerWait(bt.Wait)
		}
	case tBeat:
		bt, err := parseBeat(m.Bytes())
		m.Release()
		if err != nil {
			l.c.Malformed.Inc()
			return
		}
		if l.rejoin && bt.Site == l.me && ev.Peer != l.Ctx.Self() {
			l.rejoinHeard() // a member that still acts as the representative
		}
		if st := l.streams[l.me]; bt.Site == l.me && ev.Peer == l.reps[l.me] && bt.Seq == 0 && bt.LTS == 0 && st != nil && st.contig > 0 {
			// My representative says it numbered nothing, where this
			// member holds numbers of our site's stream: it does not
			// know where the stream stands (rejoin), and this member
			// tells it.
			l.tellRep()
		}
		if bt.Site == l.me && ev.Peer == l.reps[l.me] && !l.isRep && l.repLacks != l.inView&^bt.Has {
			l.repLacks = l.inView &^ bt.Has
			l.rebuild() // a site cut off for dead_after may be dead now
		}
		l.onBeatIn(&bt, false, false)
	default:
		l.c.Malformed.Inc()
		m.Release()
	}
}

// fromSite handles a data or skip cast inside my site.
func (l *Layer) fromSite(h *dataHdr, g event.GroupID, from event.NodeID, m *event.Message) {
	defer m.Release()
	if from == l.Ctx.Self() {
		// Ring hands a member its own casts back, in order: a
		// representative's numbered ones now go on along the site's tree.
		switch {
		case !l.isRep || h.Seq == 0 || h.Type == tStart || h.Flags&flagReplay != 0:
		case h.Site == l.me && h.LTS <= l.voidLTS:
			// Numbered before this node was readmitted (rejoined), in
			// a configuration only it was in: those numbers its members
			// gave on meanwhile, and sent on they reached far sites
			// before the members' (spread-site-soak seed 145).
			l.c.VoidDropped.Inc()
		case h.Site == l.me:
			// In the site once its members say they hold it (seen.go).
			l.pendSite(h, g, payloadOf(h, m))
		case l.streams[h.Site] != nil:
			l.streams[h.Site].returned(h.Seq)
		}
		return
	}
	if l.siteOf[from] != l.me {
		l.c.Foreign.Inc()
		return
	}
	if h.Seq == 0 && h.Type == tStart {
		if from == l.reps[l.me] {
			l.noteOpened(h, g)
		}
		return
	}
	if h.Seq == 0 { // unnumbered: a member's cast for the representative
		if l.isRep && h.Type == tData && h.Site == l.me && h.Origin == from && l.takeCast(h, from) {
			l.numberOrWait(h, g, m)
		}
		return
	}
	if l.isRep && h.Site == l.me && h.Flags&flagReplay != 0 {
		if l.rejoin {
			l.memberReplay(h, g, payloadOf(h, m))
		} else if h.Type == tStart {
			l.answerReplay(h.Seq)
		}
		return
	}
	if from != l.reps[l.me] {
		if l.rejoin && h.Site == l.me {
			l.rejoinHeard() // a member that still acts as the representative
		}
		l.c.Foreign.Inc()
		return
	}
	if from == l.awaitRep && h.Site == l.me {
		if h.Type != tStart {
			l.c.VoidDropped.Inc()
			return
		}
		l.awaitRep = event.NoNode
	}
	if h.Type == tData && h.Site == l.me {
		l.numbered[h.Origin] = max(l.numbered[h.Origin], h.Last)
	}
	l.accept(h, g, m)
	if st := l.streams[l.me]; h.Type == tData && h.Site == l.me && h.Origin == l.Ctx.Self() && (st == nil || !st.synced || h.Seq <= st.contig) {
		// Forgotten only once in order: past a gap, it may be of a
		// numbering a new representative drops (dropUnheld), and this
		// node casts it to that one again.
		l.numberedOwn(h.Last)
		l.recasting = false
	}
	if h.Site == l.me {
		l.noteSeen()
	}
}

// accept takes a numbered message or skip into its source site's stream
// (and, at a representative, sends it on and into the site). It reports
// whether it was new.
func (l *Layer) accept(h *dataHdr, g event.GroupID, payload *event.Message) bool {
	st := l.streams[h.Site]
	if st == nil {
		l.noteAhead(h, g)
		l.c.Foreign.Inc()
		return false
	}
	if h.Type == tStart {
		if h.Site == l.me && l.isRep {
			return false // I number it: nobody tells me where it stands
		}
		return l.startIn(st, h)
	}
	l.clock = max(l.clock, h.LTS)
	now := l.Ctx.Now()
	var fresh bool
	if h.Type == tSkip || h.Origin == l.Ctx.Self() {
		fresh = st.skip(h.Seq, h.end(), h.LTS, now)
	} else {
		var full bool
		fresh, full = st.add(h, g, payload, now)
		if full {
			l.c.StreamDrops.Inc()
		}
	}
	if !fresh {
		l.c.Duplicates.Inc()
		return false
	}
	if h.Type == tData && h.Mask&(1<<l.me) == 0 && !l.transit(h) {
		l.c.Unwanted.Inc()
	}
	switch {
	case l.isRep && h.Site != l.me:
		l.retain(h, g, payloadOf(h, payload))
		if l.peers {
			st.cast(h.Seq)
		}
		l.castSite(h, g, payloadOf(h, payload))
		l.forward(h, g, payloadOf(h, payload))
	case !l.isRep:
		// Every member keeps what its representative keeps (Spread 3.3:
		// each daemon keeps all it sent or received until stable): if the
		// representative fails, the member that takes over must send a
		// far site what the old one numbered into this site but never got
		// onto the link (failover.go).
		l.retain(h, g, payloadOf(h, payload))
	}
	l.tryDeliver()
	return true
}

func payloadOf(h *dataHdr, m *event.Message) *event.Message {
	if h.Type == tSkip {
		return nil
	}
	return m
}

// transit reports whether one of my children in h's tree wants h.
func (l *Layer) transit(h *dataHdr) bool {
	for _, c := range l.routes.children[h.Site] {
		if h.Mask&c.subtree != 0 {
			return true
		}
	}
	return false
}

// linkOf finds the link to the site whose representative is n.
func (l *Layer) linkOf(n event.NodeID) *link {
	s, ok := l.siteOf[n]
	if !ok {
		return nil
	}
	if lk := l.links[s]; lk != nil && lk.peer == n {
		return lk
	}
	return nil
}

// onBeat is the representative's heartbeat tick: announce my site's time
// stamp, flush skip records, watch the links.
func (l *Layer) onBeat() {
	if l.behind || len(l.ahead) > 0 {
		defer l.tryDeliver() // its bound may have run out (viewBehind, viewAhead)
	}
	if !l.isRep {
		if l.peers {
			l.sendHolds(false)
			l.beatT.Reset(l.cfg.Heartbeat)
		}
		return
	}
	now := l.Ctx.Now()
	bt := beat{Site: l.me, Seq: l.siteSeq, LTS: l.clock, Down: l.downs[l.me] & l.inView}
	if l.rejoin {
		// Readmitted, this node does not know where its site's stream
		// stands (rejoined): its siteSeq and clock are of what it
		// numbered alone. Announced, a far site whose stream reached
		// that number took the stamp as passed and delivered past the
		// numbers its members gave meanwhile, which came after
		// (spread-site-soak seed 69, 8 deliveries out of agreed order).
		bt.Seq, bt.LTS = 0, 0
	}
	for s, st := range l.streams {
		if st != nil {
			bt.Has |= 1 << s
			bt.Aru[s] = st.contig
			if l.peers && event.SiteID(s) != l.me {
				// What the site holds, not this node alone: a far site
				// frees what every site's ARU covers, and a member that
				// takes over from this node has only what ring carried.
				bt.Aru[s] = min(st.contig, st.inSite, l.holdsFloor(event.SiteID(s)))
			}
		}
	}
	if bt != l.lastBeat || now.Sub(l.beatAt) >= 10*l.cfg.Heartbeat {
		l.lastBeat, l.beatAt = bt, now
		l.sendBeat(&bt)
	}
	if l.peers && now.Sub(l.farBeatAt) >= 10*l.cfg.Heartbeat {
		l.farBeatAt = now
		for s, fb := range l.farBeat {
			if fb != nil && l.live&(1<<s) != 0 && event.SiteID(s) != l.me {
				fb.Down = l.downs[s] & l.inView // as this node knows it now
				m := l.Ctx.NewMessage()
				fb.put(m.Append(fb.size()))
				l.Ctx.Down(&event.Event{Kind: event.Cast, Channel: l.siteChannel(), Control: true, Msg: m})
			}
		}
	}
	for _, lk := range l.links {
		if lk != nil {
			lk.flushSkips()
		}
	}
	l.freeStable()
	l.beatT.Reset(l.cfg.Heartbeat)
}

// holdsFloor is, of far source site s, up to where every other member of
// my site holds its stream by their last word (tHolds; 0 for a member not
// heard from). A message a representative cast into its site is not in
// every member's hands when ring hands it back: a member cut off then,
// whose representative crashed before ring got it there, lacked it for
// good once the far sites, by this site's ARU, had freed it (spread-site-
// soak seed 137 at rate max: n3 never got site 3's 520).
func (l *Layer) holdsFloor(s event.SiteID) uint32 {
	floor := ^uint32(0)
	for n, x := range l.siteOf {
		if x != l.me || n == l.Ctx.Self() {
			continue
		}
		h := l.holds[n]
		if h == nil || h.Has&(1<<s) == 0 {
			return 0
		}
		floor = min(floor, h.Aru[s])
	}
	return floor
}

// sendHolds: a member tells its site's representative, every 5 heartbeats
// when it changed or it waits on a tStart, every 25 else (a new
// representative hears it too), or now, up to where it holds each far
// stream, and which far streams it opened 3 heartbeats ago or more and
// still waits on a tStart for (tHolds).
func (l *Layer) sendHolds(now bool) {
	if !l.peers || l.isRep {
		return
	}
	at := l.Ctx.Now()
	var h beat
	h.Site = l.me
	for s, st := range l.streams {
		switch {
		case st == nil || event.SiteID(s) == l.me:
		case st.synced:
			h.Has |= 1 << s
			h.Aru[s] = st.contig
		case at.Sub(l.openedAt[s]) >= 3*l.cfg.Heartbeat:
			h.Wait |= 1 << s
		}
	}
	if since := at.Sub(l.holdsAt); since >= 25*l.cfg.Heartbeat || (h != l.lastHolds || h.Wait != 0) && (now || since >= 5*l.cfg.Heartbeat) {
		l.lastHolds, l.holdsAt = h, at
		m := l.Ctx.NewMessage()
		h.putAs(m.Append(h.size()), tHolds)
		l.Ctx.Down(&event.Event{Kind: event.Cast, Channel: l.siteChannel(), Control: true, Msg: m})
	}
}

// sendBeat sends a heartbeat on my children links of its site's tree and
// into my site.
func (l *Layer) sendBeat(bt *beat) {
	for _, c := range l.routes.children[bt.Site] {
		if lk := l.links[c.site]; lk != nil {
			m := l.Ctx.NewMessage()
			bt.put(m.Append(bt.size()))
			l.Ctx.Down(&event.Event{Kind: event.Send, Peer: lk.peer, Control: true, Msg: m})
			l.c.Beats.Inc()
		}
	}
	if l.peers {
		m := l.Ctx.NewMessage()
		bt.put(m.Append(bt.size()))
		l.Ctx.Down(&event.Event{Kind: event.Cast, Channel: l.siteChannel(), Control: true, Msg: m})
	}
}

// onBeatIn takes a heartbeat (from a link when wan, else from my site;
// direct when from the link to its own site's representative).
func (l *Layer) onBeatIn(bt *beat, wan, direct bool) {
	st := l.streams[bt.Site]
	if st == nil || bt.Site == l.me && l.isRep {
		return
	}
	if bt.Site == l.me && !wan && bt.Has&(1<<l.me) != 0 && bt.Aru[l.me] < l.seen {
		// My representative has not taken what this member holds: its
		// word may have been lost (cut off for a while, and nothing new
		// came after to say it again: spread-site-soak seed 241 at rate
		// max, the representative waited for good). Again (seen.go).
		l.armSeen()
	}
	if wan && bt.Site != l.me && bt.Seq == 0 && bt.LTS == 0 {
		l.rejoinBeat[bt.Site] = l.Ctx.Now()
	}
	l.clock = max(l.clock, bt.LTS)
	changed := st.beat(bt)
	down := bt.Down & l.inView
	if wan && !direct && l.links[bt.Site] != nil {
		// Relayed by another site, it may be older than what the link
		// between us and its probes told: while the link is up here, its
		// state comes from the link itself (a stale relayed beat saying
		// it is down kept it down at one end for good, and the far end
		// declared it down again for the silence).
		me := uint64(1) << l.me
		down = down&^me | l.downs[bt.Site]&me
	}
	if down != l.downs[bt.Site] && (bt.Site != l.me || !l.isRep) {
		// Site bt.Site lost links, or has one up again (probe.go): route
		// as it says (before the beat goes on, along the rebuilt tree).
		l.downs[bt.Site] = down
		changed = true
		l.rebuild()
	}
	aru := &l.arus[bt.Site]
	for s := range aru {
		if bt.Has&(1<<s) != 0 && bt.Aru[s] > aru[s] {
			aru[s] = bt.Aru[s]
			changed = true
		}
	}
	if !changed {
		if wan && direct && l.isRep {
			// Its site sends it again unchanged every 10 heartbeats:
			// it goes on too. Relayed only when it told something
			// new, one lost on a link below left the sites there
			// waiting on its stamp for good (TestHopLinkDownRoutesAround:
			// site 2's last stamp, relayed by site 1, lost on the way
			// to site 3). Only straight from its site: a copy relayed
			// to this node may be older than what its links said.
			l.sendBeat(bt)
		}
		return
	}
	if wan && l.isRep {
		l.sendBeat(bt)
		fb := *bt
		l.farBeat[bt.Site] = &fb
	}
	l.freeStable()
	l.tryDeliver()
}

// stable reports whether every live site's representative holds the
// message (safe delivery, Spread 3.3: the minimum of the sites' ARUs).
func (l *Layer) stable(it *item) bool {
	for s := event.SiteID(0); s <= maxSite; s++ {
		if l.live&(1<<s) == 0 || s == l.me || s == it.h.Site {
			continue
		}
		if l.arus[s][it.h.Site] < it.h.Seq {
			return false
		}
	}
	return true
}

// linkDown takes down the link to far site s after it failed (Figure 3.2's
// retry limit, or silence). A dead link is a link, not a site: the trees
// are rebuilt over the links still up, so s is reached through other sites
// if any path remains, and every site learns it from my heartbeats (sent at
// once) to route the same way. Only a site no path reaches is dead
// (rebuild), and reported to membership as a Suspect of its representative.
func (l *Layer) linkDown(s event.SiteID, peer event.NodeID, why string) {
	if l.downs[l.me]&(1<<s) != 0 {
		return
	}
	l.c.LinksDown.Inc()
	if l.Ctx.Logging() {
		l.Ctx.Logf("link to site %d (representative %v) down: %s", s, peer, why)
	}
	l.downs[l.me] |= 1 << s
	l.rebuild()
	if l.isRep {
		l.startProbing(s)
		l.onBeat()
	}
}

// hold counts payload bytes the layer holds (links' queues and windows,
// kept messages) for peak_buffer_bytes.
func (l *Layer) hold(d int64) {
	l.heldBytes += d
	l.c.Peak.Max(l.heldBytes)
}

// checkHold holds the application off while any link queue is long, or
// (a member, not the representative) while many of its casts wait to be
// numbered, and lets it go on once every queue is short again. The second
// bounds what the representative re-casts into the site: ring below holds
// off only the representative's own application, so without it every
// member feeds the representative's ring queue faster than one member's
// share of the token drains it (spread.stack soak seed 88).
func (l *Layer) checkHold() {
	l.drainWaiting()
	hi := l.cfg.MaxQueue / 4
	longest := 0
	for _, lk := range l.links {
		if lk != nil {
			longest = max(longest, lk.pend.Len())
		}
	}
	if l.suspect != 0 {
		// A site cut off, membership's word awaited (armCut): what is
		// cast meanwhile is kept for it, not sent.
		longest = max(longest, hi)
	}
	if !l.isRep {
		longest = max(longest, l.own.Len())
	} else {
		longest = max(longest, l.inRing(), l.waiting.Len())
	}
	if l.outOfGroups {
		// In none of its groups' views (membership removed it, and
		// has not readmitted it yet): what it casts is owed to nobody,
		// and no view's flow holds it. Let go, a member removed while
		// frozen cast at rate max once woken, alone in its own site
		// (spread-site-soak freeze seed 191: its origin numbers ran
		// 13,000 past what its site had numbered of it in 0.1 s;
		// TestHopRemovedNodeHeldOff). Held off until it is readmitted.
		longest = max(longest, hi)
	}
	switch {
	case !l.held && longest >= hi:
		l.held = true
		l.flow(event.HoldOff)
	case l.held && longest <= hi/2:
		l.held = false
		l.flow(event.Resume)
	}
}

// myGroups lists, in order, the groups whose views hold this node.
func (l *Layer) myGroups() []event.GroupID {
	gs := make([]event.GroupID, 0, len(l.views))
	for g, v := range l.views {
		if v.Has(l.Ctx.Self()) {
			gs = append(gs, g)
		}
	}
	slices.Sort(gs)
	return gs
}

// flow holds the application off (HoldOff) in its groups (those whose
// views hold this node, and those it cast in: a node in no view is held
// too), or lets it go (Resume) in its groups and in every group it was held
// off in.
func (l *Layer) flow(k event.Kind) {
	gs := l.myGroups()
	if k == event.HoldOff {
		for g := range l.appGroups {
			gs = append(gs, g)
		}
		slices.Sort(gs)
		for _, g := range slices.Compact(gs) {
			l.holdIn(g)
		}
		return
	}
	for g := range l.heldIn {
		gs = append(gs, g)
	}
	clear(l.heldIn)
	slices.Sort(gs)
	for _, g := range slices.Compact(gs) {
		if !l.belowHeld[g] { // else held still, until ring lets it go
			l.Ctx.Up(&event.Event{Kind: event.Resume, Group: g})
		}
	}
}

// holdIn holds the application off in group g (flow).
func (l *Layer) holdIn(g event.GroupID) {
	if l.heldIn[g] {
		return
	}
	l.heldIn[g] = true
	if !l.belowHeld[g] { // else held already, and until ring lets it go
		l.Ctx.Up(&event.Event{Kind: event.HoldOff, Group: g})
	}
}

// armCut arms the end of the wait for membership's word on the sites cut
// off: dead_after after the first was found so.
//
// A site no path of links reaches is reported to membership (a Suspect of
// its representative) and stays live here for dead_after: agreed order
// waits on it, what this node casts meanwhile is kept for it (the
// application is held off: checkHold), and membership decides, as in
// Spread, where a link that fails initiates a membership change. A
// representative that crashed is removed and the site's new one is
// reached on new links; the site never left, and it is sent what it
// lacks by its ARU. Only a site still cut off after dead_after, its
// representative still in the view, is dead to this site: it leaves
// the agreed order, so the others go on. Declared dead at once, a site
// whose representative membership replaced 10 ms later stayed dead for
// good (dead sites are neither probed nor revived while in the view),
// and it and the far sites never sent to each other again though their
// members shared a view (spread-site-soak seed 3102 at rate max, 152,534
// owed deliveries missing).
func (l *Layer) armCut() {
	at, found := event.Time(0), false
	for s := event.SiteID(0); s <= maxSite; s++ {
		if l.suspect&(1<<s) != 0 && (!found || l.cutAt[s] < at) {
			at, found = l.cutAt[s], true
		}
	}
	if found {
		at = at.Add(l.cfg.DeadAfter)
	}
	if l.cutOff != 0 && (!found || l.cutSent.Add(l.cfg.DeadAfter) < at) {
		at, found = l.cutSent.Add(l.cfg.DeadAfter), true // the report again (reportCut)
	}
	if !found {
		l.cutT.Stop()
		return
	}
	l.cutT.ResetAt(max(at, l.Ctx.Now().Add(time.Millisecond)))
}

// reportCut asks membership to remove the sites dead to this site while
// they are in the view (a Suspect with event.SiteCut), repeated every
// dead_after while they stay (a report may be lost, or come from the
// side that stays). Only the representative reports.
//
// A dead site stays dead while it is in the view: it is neither probed
// nor revived, so this site and it never send to each other again. When
// membership still hears both (the links are cut, the service is not:
// sites 1 and 3 apart while site 2, the only relay, is down), that left
// both sides in one view with every cast between them owed and missing.
// As in Spread, where a link failure initiates a membership change, one
// side must leave the view: membership removes the smaller (gms's
// Service.cut), and its nodes join again, readmitted afresh, on new
// links. The report names sites, not nodes: membership knows every
// node's site, including members this site has not yet seen join.
func (l *Layer) reportCut(now event.Time) {
	off := l.dead & l.inView
	if !l.isRep || off == 0 {
		l.cutOff = 0
		return
	}
	if off == l.cutOff && now < l.cutSent.Add(l.cfg.DeadAfter) {
		return
	}
	l.cutOff, l.cutSent = off, now
	c := &event.SiteCut{}
	reach := l.live &^ l.suspect
	for s := event.SiteID(0); s <= maxSite; s++ {
		if off&(1<<s) != 0 {
			c.Off = append(c.Off, s)
		} else if reach&(1<<s) != 0 {
			c.Reach = append(c.Reach, s)
		}
	}
	l.c.CutReported.Inc()
	if l.Ctx.Logging() {
		l.Ctx.Logf("sites %v dead and still in the view: asking membership to remove the smaller side (this site reaches %v)", c.Off, c.Reach)
	}
	l.Ctx.Down(&event.Event{Kind: event.Suspect, Cut: c})
}

// answerWait: members' holds said they wait on a tStart for the far
// streams in wait. Each one this representative knows where it stands it
// casts into its site again, as to a newcomer (replay from the first
// message on: a tStart and what it keeps), at most once every 3
// heartbeats. A member opens a stream when its view has the site; the
// tStart comes in the representative's cast into the site, which, when
// the member's view came late (a lost membership update), arrived before
// the stream was open and was dropped: that member then held the stream's
// messages and delivered nothing more, in agreed order, for good (a
// three-way split, seed 94 at rate max: n6 took site 1's and site 2's
// tStarts 150 ms before its view readmitted them; 1845 owed deliveries
// missing).
func (l *Layer) answerWait(wait uint64) {
	now := l.Ctx.Now()
	for s := event.SiteID(0); s <= maxSite; s++ {
		if wait&(1<<s) == 0 || s == l.me || l.live&(1<<s) == 0 || now.Sub(l.waitAt[s]) < 3*l.cfg.Heartbeat {
			continue
		}
		if st := l.streams[s]; st == nil || !st.synced {
			continue
		}
		l.waitAt[s] = now
		l.c.WaitAnswered.Inc()
		l.replay(s, 1, l.castReplay)
	}
}

package hop

import (
	"maps"
	"slices"
	"strings"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/stack"
)

func init() {
	compose.Register(compose.LayerInfo{
		Name:        "hop",
		BufferBound: bufferBound,
		Summary: "Spread's wide area (Hop): each site's representative sends the site's messages over Hop links along " +
			"a shortest-path tree per source site, forwarding at once even past gaps and recovering each loss on the link " +
			"where it happened (nacks, acks with link_aru, a token bucket and a window per link); links below which no " +
			"site has a member of the group get a skip record instead of the data. Messages are delivered in agreed order " +
			"(Lamport time stamp, then site id) once every site's stream has passed them; idle sites send heartbeats.",
		Params: []compose.Param{
			{Name: "links", Type: compose.String, Default: "", Doc: "static site topology A-B[:weight],... ('' = every pair of sites joined, weight 1)"},
			{Name: "link_rate", Type: compose.Size, Default: "250KB", Doc: "token bucket rate of each link, bytes per second", Min: 1, Max: 1 << 40},
			{Name: "bucket", Type: compose.Size, Default: "16KB", Doc: "most bytes of tokens a link saves up (its burst)", Min: 2048, Max: 1 << 30},
			{Name: "window", Type: compose.Int, Default: "512", Doc: "packets a link may have unacknowledged (a power of two)", Min: 1, Max: 1 << 20},
			{Name: "nack_delay", Type: compose.Duration, Default: "5ms", Doc: "wait before the first nack of a gap (delayed or reordered packets)", Min: 0.0001, Max: 60},
			{Name: "nack_retry", Type: compose.Duration, Default: "200ms", Doc: "interval between nacks while a gap remains", Min: 0.001, Max: 60},
			{Name: "max_retries", Type: compose.Int, Default: "20", Doc: "requests of one link seq after which the far site is declared dead", Min: 1, Max: 1 << 20},
			{Name: "ack_short", Type: compose.Duration, Default: "10ms", Doc: "delay of the ack after the first packet since the last one", Min: 0.0001, Max: 60},
			{Name: "ack_long", Type: compose.Duration, Default: "100ms", Doc: "period of link acks", Min: 0.001, Max: 60},
			{Name: "ack_every", Type: compose.Int, Default: "32", Doc: "most packets sent or received between two acks", Min: 1, Max: 1 << 20},
			{Name: "heartbeat", Type: compose.Duration, Default: "20ms", Doc: "period of time stamp heartbeats and of skip records", Min: 0.0001, Max: 60},
			{Name: "dead_after", Type: compose.Duration, Default: "3s", Doc: "silence of a link after which the far site is declared dead", Min: 0.01, Max: 3600},
			{Name: "max_queue", Type: compose.Int, Default: "64", Doc: "link queue at which this node's application is held off (a quarter of it; it resumes at an eighth)", Min: 4, Max: 1 << 24},
			{Name: "max_pending", Type: compose.Int, Default: "8192", Doc: "out-of-order messages held per source site, messages kept per source site until every site has them, and packets queued per link (a power of two)", Min: 1, Max: 1 << 24},
			{Name: "history", Type: compose.Duration, Default: "1s", Doc: "how long a node keeps a message at least, even once every site holds it, for a site or member admitted meanwhile (state transfer)", Min: 0, Max: 3600},
			{Name: "history_bytes", Type: compose.Size, Default: "4MB", Doc: "most bytes of messages every site holds that history keeps; past it the oldest go at once", Min: 0, Max: 1 << 40},
			{Name: "safe", Type: compose.Bool, Default: "off", Doc: "deliver a message only once every site's representative holds it (the sites' ARUs in the heartbeats), still in agreed order"},
		},
		Gives:     []compose.Property{compose.Reliable, compose.FIFO, compose.Agreed},
		GivesWith: compose.GivesIfOn("safe", compose.Safe),
		Counters: append(compose.CountersOf(counters{}),
			// made at run time, one per link (newLink)
			compose.CounterDoc{Name: "retransmissions_by_link:<link>", Doc: "data packets retransmitted by the sending end of one link (s3>s4: site 3's representative towards site 4); skip and start records resent count only in retransmissions"},
		),
		Summarize: summarize,
		New: func(p compose.Params) (stack.Layer, error) {
			return compose.NewIfValid(Config{
				Links: p.String("links"), LinkRate: int64(p.Int("link_rate")), Bucket: int64(p.Int("bucket")),
				Window: p.Int("window"), NackDelay: p.Duration("nack_delay"), NackRetry: p.Duration("nack_retry"),
				MaxRetries: p.Int("max_retries"), AckShort: p.Duration("ack_short"), AckLong: p.Duration("ack_long"),
				AckEvery: p.Int("ack_every"), Heartbeat: p.Duration("heartbeat"), DeadAfter: p.Duration("dead_after"),
				MaxQueue: p.Int("max_queue"), MaxPending: p.Int("max_pending"), Safe: p.Bool("safe"),
				History: p.Duration("history"), HistoryBytes: int64(p.Int("history_bytes")),
			}, New)
		},
	})
}

// summarize turns hop's counters into the report's figures: retransmissions
// by link, packets pruned, tokens per second, hop recovery latency and the
// agreed wait.
func summarize(c compose.Counters) compose.Summary {
	var s compose.Summary
	t := c.Total
	byLink := map[string]int64{}
	for _, k := range slices.Sorted(maps.Keys(t)) {
		if name, ok := strings.CutPrefix(k, "retransmissions_by_link:"); ok {
			byLink[name] = t[k]
		}
	}
	s.Breakdowns = map[string]map[string]int64{"retransmissions_by_link": byLink}
	if t["recovered"] > 0 {
		s.Ratio("recovery_latency_ms", float64(t["recovery_ns"])/float64(t["recovered"])/1e6)
	}
	if t["agreed_delivered"] > 0 {
		s.Ratio("agreed_wait_ms", float64(t["agreed_wait_ns"])/float64(t["agreed_delivered"])/1e6)
	}
	if t["send_active_ns"] > 0 {
		s.Ratio("tokens_per_s", float64(t["tokens"])/(float64(t["send_active_ns"])/1e9))
	}
	if t["pruned"] > 0 {
		s.Notef("%d data packets pruned (skip records sent instead: %d)", t["pruned"], t["skips_sent"])
	}
	if t["links_down"] > 0 {
		s.Notef("%d Hop links declared down; trees routed around them", t["links_down"])
	}
	if t["sites_declared_dead"] > 0 {
		s.Notef("%d far sites found cut off (no link path) and reported to membership", t["sites_declared_dead"])
	}
	if t["sites_dead"] > 0 {
		s.Notef("%d far sites still cut off dead_after later, their representatives still in the view: dead (out of agreed order)", t["sites_dead"])
	}
	return s
}

// counters are the layer's counters: each is named and documented once by
// its tags (compose.CountersOf) and Init binds them (stack.Context.BindCounters).
type counters struct {
	DataSent      *stack.Counter `counter:"data_sent" doc:"data packets sent on Hop links (first transmissions)"`
	Retx          *stack.Counter `counter:"retransmissions" doc:"packets sent again on a Hop link after a nack"`
	Acks          *stack.Counter `counter:"acks_sent" role:"ack" doc:"link acks (link_aru and highest seq sent)"`
	Nacks         *stack.Counter `counter:"nacks_sent" doc:"link nacks (the retransmit list)"`
	Skips         *stack.Counter `counter:"skips_sent" doc:"skip records sent in place of pruned data"`
	Pruned        *stack.Counter `counter:"pruned" doc:"data packets not sent on a link because no site below it has a member of the group"`
	Beats         *stack.Counter `counter:"heartbeats_sent" doc:"time stamp heartbeats sent on Hop links"`
	Delivered     *stack.Counter `counter:"delivered" doc:"messages delivered to the application in agreed order"`
	Agreed        *stack.Counter `counter:"agreed_delivered" doc:"messages whose agreed wait was measured"`
	WaitNs        *stack.Counter `counter:"agreed_wait_ns" kind:"ns" doc:"time messages waited for agreed order after FIFO order would have delivered them"`
	Recovered     *stack.Counter `counter:"recovered" doc:"link losses repaired by the link's own sender"`
	RecNs         *stack.Counter `counter:"recovery_ns" kind:"ns" doc:"time from finding a link loss to its repair"`
	Tokens        *stack.Counter `counter:"tokens" doc:"packets the token buckets let onto links"`
	ActiveNs      *stack.Counter `counter:"send_active_ns" kind:"ns" doc:"time links spent sending (gaps capped)"`
	Duplicates    *stack.Counter `counter:"duplicates" doc:"packets received twice"`
	Malformed     *stack.Counter `counter:"malformed" doc:"packets whose hop header did not decode"`
	Foreign       *stack.Counter `counter:"foreign" doc:"packets from nodes that are not a representative of a linked site, or of a site outside the view"`
	QueueDrops    *stack.Counter `counter:"queue_drops" doc:"packets dropped because a link queue held max_pending"`
	StreamDrops   *stack.Counter `counter:"stream_drops" doc:"messages dropped because they were max_pending beyond the first one missing"`
	Unwanted      *stack.Counter `counter:"data_unwanted" doc:"data packets that reached a site with no member of their group and no child wanting them (pruning failed)"`
	Dead          *stack.Counter `counter:"sites_declared_dead" doc:"far sites a representative found cut off (no path of links up reaches them) and reported to membership"`
	CutDead       *stack.Counter `counter:"sites_dead" doc:"far sites still cut off dead_after after they were reported to membership, their representatives still in the view: they left this node's agreed order"`
	CutReported   *stack.Counter `counter:"cuts_reported" doc:"reports a representative sent membership of dead sites still in the view (repeated every dead_after while they stay): membership removes the smaller side of the split"`
	LinksDown     *stack.Counter `counter:"links_down" doc:"Hop links a representative declared down (retry limit or silence); the trees route around them"`
	Rebuilt       *stack.Counter `counter:"routes_rebuilt" doc:"times a node's dissemination trees changed (the first view, a site joining or leaving, a link going down)"`
	Peak          *stack.Counter `counter:"peak_buffer_bytes" kind:"peak" role:"buffer_peak" doc:"most payload bytes held at once (link queues and windows, messages kept until every site has them)"`
	Resent        *stack.Counter `counter:"resent" doc:"kept messages sent again on a new child link (a new representative, or a tree rebuilt) that its site lacked"`
	Unqueued      *stack.Counter `counter:"unqueued" doc:"packets waiting on a link dropped unsent because the far site no longer takes their source's stream from this one (a tree rebuilt; its new parent resends what it lacks)"`
	KeepDrops     *stack.Counter `counter:"keep_drops" doc:"kept messages dropped because max_pending were kept per source site (a later failover cannot resend them)"`
	Probes        *stack.Counter `counter:"link_probes" doc:"probes sent across links declared down, asking whether they carry traffic again (every quarter of dead_after)"`
	LinksUp       *stack.Counter `counter:"links_up_again" doc:"links declared down that answered a probe and were brought up again (the trees are rebuilt over them)"`
	Starts        *stack.Counter `counter:"stream_starts" doc:"streams told where they stand (tStart, state transfer): a newcomer, a readmitted site, or a stream moved past what its feeder no longer has"`
	ToldLost      *stack.Counter `counter:"told_lost" doc:"site sequence numbers a stream skipped because its feeder no longer had them; the application is told (event.Lost)"`
	Replayed      *stack.Counter `counter:"replayed" doc:"messages and skip runs a representative cast into its site again for a newcomer (state transfer)"`
	WaitAnswered  *stack.Counter `counter:"waits_answered" doc:"far streams a representative cast into its site again (a tStart and what it keeps) because a member said it waited on their tStart: it opened the stream after the tStart went by (its view came late)"`
	ViewBehind    *stack.Counter `counter:"view_behind" doc:"times agreed order held on a message of this node's site whose caster's view had a site this node's view lacked (this node's membership update came late), until its next view or dead_after"`
	ViewAhead     *stack.Counter `counter:"view_ahead" doc:"times agreed order held at a message dropped because its site was not in this node's view though its caster's view of the group was newer (a site readmitted, this node's membership update late), until its next view or dead_after"`
	LinkLives     *stack.Counter `counter:"link_lives_seen" doc:"times a link's far end numbered it afresh (a new life: it reopened the link) and this end started its receiving side over"`
	StaleLife     *stack.Counter `counter:"stale_life_dropped" doc:"link packets (data, acks, nacks) of an earlier life of the link, dropped: sent before one end reopened it, their numbers stand for other packets now"`
	Redelivery    *stack.Counter `counter:"redelivery_suppressed" doc:"messages a stream opened again (this node readmitted, or their site back in its view) offered for delivery that this node had delivered before the stream closed, or that a readmitted representative numbered again after delivering it alone (not delivered again)"`
	VoidDropped   *stack.Counter `counter:"void_dropped" doc:"messages a readmitted representative had numbered alone that its site's ring handed back after its readmission (not sent on: its members numbered those numbers meanwhile), and, at a member, what a representative new to its site numbered of the site's stream before it answered the member's word on where the stream stands (numbered in a configuration before; it numbers them again)"`
	Late          *stack.Counter `counter:"late_dropped" doc:"messages not delivered because they sort before one delivered already (numbered while their site was out of this node's live sites, in a configuration this node was not in); the application is told (event.Lost)"`
	RolledBack    *stack.Counter `counter:"alone_rolled_back" doc:"times a node that numbered its site's stream alone (no member, no far site in its view) came back under another representative and forgot those numbers, to take the site's own"`
	FloorRestored *stack.Counter `counter:"floor_restored" doc:"times a node removed from its groups after its live sites lost every far site set agreed order's floor back to where it stood then: what it delivered since, its site numbered without the far sites, and it must not drop as late what they number for the view that readmits it"`
	GaveUp        *stack.Counter `counter:"rejoin_gave_up" doc:"times a representative readmitted after being alone heard from no member where its site's stream stands within 1 s (from when its site's ring carried casts, and again from the last heartbeat of a member still acting as the representative), and numbered on from its own stream; or, with no member left to ask, once every live far site's heartbeat came, numbered on past their ARUs"`
	SeenSent      *stack.Counter `counter:"seen_sent" doc:"members' word to their representative on where their stream of their own site is contiguous (tSeen unicasts); the representative takes what it numbered into its stream and sends it on only once every member holds it"`
	SiteWait      *stack.Counter `counter:"site_wait_ns" kind:"ns" doc:"time messages a representative numbered waited, after its site's ring handed them back, for its members to say they hold them (before they go into its stream and onto its links)"`
	Unheld        *stack.Counter `counter:"unheld_dropped" doc:"messages of its own site's stream a node held past where it was contiguous when another node took over as its site's representative, dropped: numbered by the old representative past a cast that was lost with it, never delivered nor sent on; the new representative numbers the casts among them again"`
	Unseen        *stack.Counter `counter:"unseen_dropped" doc:"messages a representative numbered and had back from its site's ring that no member ever said it held, dropped when it was readmitted (it was cut off from its site: the members that took over numbered those numbers again, members' casts among them with later stamps; delivered or sent on, they broke agreed order)"`
	OutOfView     *stack.Counter `counter:"out_of_view_casts" doc:"application casts taken while this node was in none of its groups' views (removed, not yet readmitted): owed to nobody; the application is held off meanwhile, so a few at most"`
	NewcomerJumps *stack.Counter `counter:"newcomer_jumps" doc:"first casts of members new to the site (joined, or readmitted) a representative took though their origin numbers ran more than max_pending past what it had numbered of them (their earlier life: alone, a node numbers its own casts)"`
	Resynced      *stack.Counter `counter:"recast_awaited" doc:"members' casts a new representative passed over because an earlier one of the same member was still to come again (numbered when they come again, in order)"`
}

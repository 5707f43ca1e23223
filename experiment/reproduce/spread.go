package reproduce

import (
	"fmt"
	"math"
	"strings"

	"github.com/layercast/layercast/internal/units"
)

// spread is issue 11's "What must hold" as a table. The paper's 4.7x and
// 5.3x (section 4) compare its research daemon (hop links between sites,
// a ring inside each) with the production daemon, one ring stretched across
// the wide area: specs/spread-ring-wan.stack. The paper measures nothing
// against end-to-end recovery; its case for hop-by-hop over end-to-end
// (section 3.2, the Hop protocol) is latency over paths of several hops.
// The issue puts the 3x against the end-to-end alternative
// (specs/spread-e2e.stack: a window of 64 KB per receiver, recovery from
// the original sender across the WAN); its window paces it, so both stacks
// run at rate max, each as fast as it goes. On the paper's three sites a
// direct WAN link joins every pair, so every receiving site is one link
// from the source: hop's recovery on the link where a loss happened is
// recovery by the source, and only flow control differs (hop runs at its
// links' bandwidth, the end-to-end window at window / round trip less the
// stalls of its losses). Measured: 1.8x at rate max, 1.3x at the highest
// rate each delivers everything at (scripts/spread-rates.sh), not 3x.
//
// Checked against the comparison the issue describes (the source
// retransmits across the whole path, each loss costing an end-to-end round
// trip and bandwidth on every link): on this full mesh the whole path from
// the source to a site is one link, so a repair from the source costs one
// round trip of that link and bandwidth on that link alone, in both
// stacks. reliable answers a NAK by unicast to the one that asked (a
// re-multicast only when several ask within nak_retry/2); multicast to all
// would add at 1% loss about 1% to every link, not a factor. Its window,
// 64 KB, is TCP's without scaling, above the slowest path's
// bandwidth-delay product (40 KB): smaller, it would be window-bound
// without loss, a handicap the paper's set-up does not give. Nor is hop
// held back: its window (512 packets per link) is over ten times the
// links' bandwidth-delay product, a gap is nacked after 5 ms and again
// every 200 ms (above the links' 60 to 160 ms round trips, so no repair is
// asked twice while on its way), and its token bucket (240 KB/s, the
// links' 250 KB/s less room for acks and heartbeats) is what it runs at:
// 222 msgs/s at rate max against the 230 it lets through in 1,045-byte
// packets (the rest is retransmissions), the links full. The ratio is
// therefore bounded by the links' bandwidth over what the end-to-end
// window sustains; only a topology where end to end crosses several lossy
// links (e2e-chain) lets hop's local recovery count, and there the gain is
// in latency more than in throughput.
var spread = Paper{
	Name:  "spread",
	Title: "Spread: wide-area group communication (hop-by-hop links against a ring across the WAN and end-to-end recovery)",
	Needs: "the hop layer (issue 11)",
	Experiments: []Experiment{
		{
			ID: "wan", Title: "three sites, WAN links of 30-80 ms with 1% loss and 250 KB/s, one sender as fast as each stack goes (section 4: 4.7x)",
			Stacks: []string{"spread.stack", "spread-ring-wan.stack"}, Scenario: "spread-wan.scenario", Quick: []string{"duration=3s"},
			Measures: []Measure{
				{Metric: "throughput, hop-by-hop / ring across the WAN", Unit: "msgs/s", Field: "throughput_msgs_per_s", Paper: "4.7x (issue 11 asks at least 3x)", Rule: Rule{Kind: Ratio, A: 3}},
				{Metric: "owed deliveries made", Field: "deliveries_of_expected / deliveries_expected", Paper: "hop-by-hop delivers everything", Rule: Rule{Kind: AtLeast, A: 1}, FirstOnly: true},
			},
		},
		{
			ID: "2site", Title: "two sites, one 80 ms WAN link with 1% loss and 250 KB/s (section 4: 5.3x)",
			Stacks: []string{"spread.stack", "spread-ring-wan.stack"}, Scenario: "spread-2site.scenario", Quick: []string{"duration=3s"},
			Measures: []Measure{
				{Metric: "throughput, hop-by-hop / ring across the WAN", Unit: "msgs/s", Field: "throughput_msgs_per_s", Paper: "5.3x (issue 11 asks at least 3x)", Rule: Rule{Kind: Ratio, A: 3}},
			},
		},
		{
			ID: "e2e", Title: "the same three sites, one sender as fast as each stack goes: hop-by-hop against a window-based end-to-end protocol that recovers from the original sender",
			Stacks: []string{"spread.stack", "spread-e2e.stack"}, Scenario: "spread-wan.scenario", Quick: []string{"duration=3s"},
			Measures: []Measure{
				{Metric: "throughput, hop-by-hop / end-to-end", Unit: "msgs/s", Field: "throughput_msgs_per_s", Paper: "not measured by the paper (its 4.7x is against the ring across the WAN, experiment wan); issue 11 asks at least 3x", Rule: Rule{Kind: Ratio, A: 3},
					Known: "on the paper's three sites, all directly linked, hop-by-hop and end-to-end recovery both repair each loss from the source over one link, so hop gains only by flow control: the WAN links' bandwidth over what the end-to-end window sustains (issue 11)", Why: whyE2E},
			},
		},
		{
			ID: "e2e-chain", Title: "four sites in a chain, every link 30 ms, 1% loss, 250 KB/s; end to end crosses up to three of them (modelled as direct links, summed latency, compound loss): where hop-by-hop recovery is local and end to end is not",
			Stacks:   []string{`hop(link_rate=240KB, links="1-2,2-3,3-4") : ring(member_limit=40) : gms`, "spread-e2e.stack"},
			Scenario: "spread-chain-e2e.scenario", Quick: []string{"duration=3s"},
			Measures: []Measure{
				{Metric: "throughput, hop-by-hop / end-to-end", Unit: "msgs/s", Field: "throughput_msgs_per_s", Paper: "not measured by the paper (section 3.2 argues hop-by-hop for latency over several hops); issue 11 asks at least 3x", Rule: Rule{Kind: Ratio, A: 3},
					Known: "even where each loss is repaired one link away by hop and up to three links away end to end, hop's gain is its links' bandwidth over what the end-to-end window sustains, below 3x; the latency gain is the larger (issue 11)", Why: whyE2EChain},
				{Metric: "owed deliveries made", Field: "deliveries_of_expected / deliveries_expected", Paper: "hop-by-hop delivers everything", Rule: Rule{Kind: AtLeast, A: 1}, FirstOnly: true},
			},
		},
	},
}

// whyE2E bounds the hop-by-hop / end-to-end ratio on a full mesh of WAN
// links: hop runs at its links' bandwidth, so the ratio is at most that
// bandwidth over what the end-to-end window sustains.
func whyE2E(runs []Run) string {
	return whyE2EFrom(runs, "every site is one WAN link from the source, so hop's parent of a lossy link is the source, as end to end; ")
}

// whyE2EChain is whyE2E on the chain, where end to end recovers across
// several links and hop across one.
func whyE2EChain(runs []Run) string {
	return whyE2EFrom(runs, "hop repairs each loss from the lossy link's parent, end to end from the source up to three links away, but both are capped by the chain's bandwidth; ")
}

func whyE2EFrom(runs []Run, lead string) string {
	if len(runs) < 2 {
		return ""
	}
	hop, e2e := runs[0], runs[1]
	size := hop.scenarioNum("msg-size")
	bw := wanBandwidth(hop.Report.Scenario)
	if bw <= 0 || size <= 0 {
		return ""
	}
	h, e := hop.get("throughput_msgs_per_s"), e2e.get("throughput_msgs_per_s")
	return fmt.Sprintf(lead+"hop carries %.0f msgs/s (%.0f%% of the %.0f KB/s links with %.0f-byte messages), the end-to-end window %.0f msgs/s "+
		"(latency p50 %.0f ms against hop's %.0f, p99 %.0f against %.0f): on this topology no ratio above %.2f is possible",
		h, 100*h*size/bw, bw/1000, size, e, e2e.get("latency_ms.p50"), hop.get("latency_ms.p50"),
		e2e.get("latency_ms.p99"), hop.get("latency_ms.p99"), bw/size/math.Max(e, 1))
}

// wanBandwidth is the least bandwidth of the scenario's WAN links, in
// bytes per second (0 if none says).
func wanBandwidth(scenario string) float64 {
	least := 0.0
	for _, kv := range strings.Fields(scenario) {
		if !strings.HasPrefix(kv, "wan=") {
			continue
		}
		for _, f := range strings.Split(kv, ",") {
			if v, ok := strings.CutPrefix(f, "bandwidth="); ok {
				if b, err := units.ParseSize(v); err == nil && b > 0 && (least == 0 || float64(b) < least) {
					least = float64(b)
				}
			}
		}
	}
	return least
}

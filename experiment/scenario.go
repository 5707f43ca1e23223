package experiment

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
)

// Scenario is one workload on one network: who is in which group, who sends
// how fast for how long, and what the network does to the packets.
//
// Group assignment follows the Ricochet paper (section 5): Nodes*GroupsPerNode
// memberships are spread over Nodes*GroupsPerNode/GroupSize groups at random
// (from Seed) but balanced, so every node is in exactly GroupsPerNode groups
// and every group has exactly GroupSize members.
//
// Senders: Senders nodes, chosen from the seed (0 means every node), each
// multicast to all of their groups in turn (round-robin), Rate messages per
// second in total per sender node, for Duration of virtual time. So a
// sender's rate is split evenly over its GroupsPerNode groups, and the
// aggregate offered load is Senders*Rate messages per second.
type Scenario struct {
	// Nodes is the number of nodes (ids 1..Nodes).
	Nodes int
	// GroupsPerNode is d: how many groups each node belongs to.
	GroupsPerNode int
	// GroupSize is s: how many members each group has.
	GroupSize int
	// Senders is how many nodes send (chosen from the seed); 0 means all.
	Senders int
	// Rate is messages per second per sender node, over all its groups;
	// 0 means max: as fast as the stack and the network take them.
	Rate float64
	// MsgSize is the application payload size in bytes (at least
	// PayloadHeader).
	MsgSize int
	// Duration is the virtual sending time.
	Duration time.Duration
	// Warmup, when positive, makes throughput a steady-state figure: the
	// deliveries from Warmup after sending starts to the end of sending,
	// per second of that window. It leaves out a rate controller's climb
	// from its lowest rate and the drain's recovery tail, both of which
	// the whole-run figure (Warmup 0: from the start to the last delivery)
	// counts.
	Warmup time.Duration
	// Drain is extra virtual time after the last send for recovery; the run
	// ends early once every expected message is delivered and the network
	// is quiet.
	Drain time.Duration
	// Loss is a loss model in ParseLoss syntax ("" or "none": no loss).
	Loss string
	// Seed makes the run repeatable.
	Seed uint64
	// Latency is the one-way link latency; Jitter adds a uniform random
	// delay in [0, Jitter).
	Latency, Jitter time.Duration
	// Capacity is the per-node capacity syntax, e.g.
	// "20000pps" or "20000pps,100MB" (bytes per second); "" means unlimited.
	Capacity string
	// Faults are fault specs in ParseFault syntax (crash:NODE@TIME,
	// freeze:NODE@TIME+DURATION, ...).
	Faults []string
	// MaxBurst bounds the sends one sender attempts per step at Rate max
	// when the network never pushes back (no capacity set): at most MaxBurst
	// messages per MaxQuantum of virtual time.
	MaxBurst int
	// Sites place nodes in Spread sites (LANs); nodes not placed are in
	// site 0. WAN links join sites (sites.go).
	Sites []SiteSpec
	WAN   []WANSpec
}

// MaxQuantum is how long a sender at Rate max waits before it tries again
// after the stack's application queue was full (the stack signals a held
// group with a Flow callback, but not a full queue).
const MaxQuantum = 500 * time.Microsecond

// Default is the scenario every key falls back to: the 16-node
// setup with no loss.
func Default() Scenario {
	return Scenario{
		Nodes: 16, GroupsPerNode: 4, GroupSize: 8, Senders: 0, Rate: 100,
		MsgSize: 1000, Duration: 10 * time.Second, Drain: 2 * time.Second,
		Loss: "none", Seed: 1, Latency: time.Millisecond, Jitter: 100 * time.Microsecond,
		MaxBurst: 64,
	}
}

// Key describes one scenario setting: its name (the flag name and the
// scenario file key), a one-line doc for the flag help, and its default as
// text.
type Key struct {
	Name, Usage string
	// Repeatable keys (fault) collect every occurrence.
	Repeatable bool
}

// Keys lists every scenario setting, in the order help and Describe show
// them.
var Keys = []Key{
	{Name: "nodes", Usage: "number of nodes (ids n1..nN)"},
	{Name: "groups-per-node", Usage: "d: groups each node belongs to (balanced random assignment from the seed, Ricochet section 5)"},
	{Name: "group-size", Usage: "s: members per group; there are nodes*d/s groups, so nodes*d must be divisible by s"},
	{Name: "senders", Usage: "K: number of sender nodes chosen from the seed (0 = all); each multicasts to all its groups in turn"},
	{Name: "rate", Usage: "messages per second per sender node, over all its groups, or 'max' (as fast as stack and network allow)"},
	{Name: "msg-size", Usage: "application payload bytes per message (min 24: sender, group, index, send time)"},
	{Name: "duration", Usage: "virtual sending time, e.g. 10s"},
	{Name: "warmup", Usage: "count throughput from this long after sending starts to the end of sending (steady state: a rate controller's climb and the drain left out); 0 = from the start to the last delivery"},
	{Name: "drain", Usage: "extra virtual time after the last send for recovery (the run stops early once all is delivered)"},
	{Name: "loss", Usage: "loss model: none, uniform:P, bursty:P,b, markov:P,m (e.g. uniform:5%)"},
	{Name: "latency", Usage: "one-way link latency, e.g. 1ms"},
	{Name: "jitter", Usage: "extra uniform random delay per packet in [0, jitter)"},
	{Name: "capacity", Usage: "per-node send and receive capacity: Npps, bytes/s (100MB), buf=N receive buffer packets, unicast-first (unicast taken before queued multicast, QSM's second socket), comma-separated, e.g. 20000pps,buf=512; empty = unlimited"},
	{Name: "seed", Usage: "random seed: same seed, same run"},
	{Name: "fault", Usage: "fault, repeatable: crash:NODE@TIME, freeze:NODE@TIME+DURATION, partition:1,2|3,4@TIME, cut:1,2|3,4@TIME (only those sets lose touch), heal@TIME", Repeatable: true},
	{Name: "max-burst", Usage: "at rate max with unlimited capacity: sends per sender per 500µs step"},
	{Name: "site", Usage: "site, repeatable: ID=NODES places nodes in a Spread site (LAN), e.g. 1=1-3; unplaced nodes are in site 0", Repeatable: true},
	{Name: "wan", Usage: "WAN link, repeatable: A-B latency=30ms [jitter=2ms bandwidth=1MB queue=64KB loss=uniform:1%] (bandwidth in bytes/s)", Repeatable: true},
}

// Set sets one key from its text form (as on the command line or in a
// scenario file). A repeatable key appends.
func (sc *Scenario) Set(key, value string) error {
	v := strings.TrimSpace(value)
	var err error
	switch key {
	case "nodes":
		sc.Nodes, err = posInt(v, 1)
	case "groups-per-node":
		sc.GroupsPerNode, err = posInt(v, 1)
	case "group-size":
		sc.GroupSize, err = posInt(v, 1)
	case "senders":
		if v == "all" {
			sc.Senders = 0
			return nil
		}
		sc.Senders, err = posInt(v, 0)
	case "rate":
		sc.Rate, err = parseRate(v)
	case "msg-size":
		var n int64
		n, err = compose.ParseSize(v)
		if err == nil && (n < PayloadHeader || n > 64000) {
			err = fmt.Errorf("%d bytes is out of range [%d, 64000]", n, PayloadHeader)
		}
		sc.MsgSize = int(n)
	case "duration":
		sc.Duration, err = posDuration(v, false)
	case "warmup":
		sc.Warmup, err = posDuration(v, true)
	case "drain":
		sc.Drain, err = posDuration(v, true)
	case "latency":
		sc.Latency, err = posDuration(v, true)
	case "jitter":
		sc.Jitter, err = posDuration(v, true)
	case "loss":
		if v != "" && v != "none" {
			if _, err = ParseLoss(v); err != nil {
				err = fmt.Errorf("%w%s", err, lossHint(v))
			}
		}
		sc.Loss = v
	case "capacity":
		if v != "" && v != "none" && v != "unlimited" {
			_, err = ParseCapacity(v)
		}
		sc.Capacity = v
	case "seed":
		sc.Seed, err = strconv.ParseUint(v, 10, 64)
		if err != nil {
			err = fmt.Errorf("%q is not a non-negative integer", v)
		}
	case "fault":
		if _, err = ParseFault(v); err == nil {
			sc.Faults = append(sc.Faults, v)
		}
	case "max-burst":
		sc.MaxBurst, err = posInt(v, 1)
	case "site":
		var st SiteSpec
		if st, err = ParseSite(v); err == nil {
			sc.Sites = append(sc.Sites, st)
		}
	case "wan":
		var w WANSpec
		if w, err = ParseWAN(v); err == nil {
			sc.WAN = append(sc.WAN, w)
		}
	default:
		return fmt.Errorf("unknown scenario key %q%s", key, suggestKey(key))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

func suggestKey(key string) string {
	best, bd := "", 3
	for _, k := range Keys {
		if d := editDistance(key, k.Name); d < bd {
			best, bd = k.Name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func posInt(v string, lo int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", v)
	}
	if n < lo || n > 1<<20 {
		return 0, fmt.Errorf("%d is out of range [%d, %d]", n, lo, 1<<20)
	}
	return n, nil
}

func posDuration(v string, zeroOK bool) (time.Duration, error) {
	d, err := compose.ParseDuration(v)
	if err != nil {
		return 0, err
	}
	if d < 0 || (d == 0 && !zeroOK) {
		return 0, fmt.Errorf("%q must be positive", v)
	}
	if d > 24*time.Hour {
		return 0, fmt.Errorf("%q is longer than a day of virtual time", v)
	}
	return d, nil
}

func parseRate(v string) (float64, error) {
	if v == "max" {
		return 0, nil
	}
	v = strings.TrimSuffix(strings.TrimSuffix(v, "/s"), "msgs")
	r, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(r) || math.IsInf(r, 0) {
		return 0, fmt.Errorf("%q is neither a number of messages per second nor 'max'", v)
	}
	if r <= 0 || r > 10_000_000 {
		return 0, fmt.Errorf("%g messages/s is out of range (0, 1e7]; use 'max' for as fast as possible", r)
	}
	return r, nil
}

// RateText is the rate as Set accepts it.
func (sc *Scenario) RateText() string {
	if sc.Rate == 0 {
		return "max"
	}
	return strconv.FormatFloat(sc.Rate, 'g', -1, 64)
}

// ScenarioLine reads one line of a scenario file: text is the line without
// its `#` comment and outer spaces ("" for a line to skip); ok says it has
// the `key: value` shape, and key and value are its two sides, trimmed.
func ScenarioLine(line string) (text, key, value string, ok bool) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	text = strings.TrimSpace(line)
	k, v, ok := strings.Cut(text, ":")
	return text, strings.TrimSpace(k), strings.TrimSpace(v), ok
}

// repeatable reports whether a key may be given more than once (fault).
func repeatable(key string) bool {
	for _, k := range Keys {
		if k.Name == key {
			return k.Repeatable
		}
	}
	return false
}

// lossHint suggests a percentage where a loss model's rate is a bare
// number above 1 ("uniform:5" reads as 500%): ` (did you mean "uniform:5%"?)`.
func lossHint(v string) string {
	kind, rest, ok := strings.Cut(v, ":")
	rate, tail, _ := strings.Cut(rest, ",")
	f, err := strconv.ParseFloat(strings.TrimSpace(rate), 64)
	if !ok || err != nil || f <= 1 || f > 100 {
		return ""
	}
	if tail != "" {
		tail = "," + tail
	}
	return fmt.Sprintf(" (a bare rate is a fraction; did you mean %q?)", kind+":"+strings.TrimSpace(rate)+"%"+tail)
}

// LoadFile applies a scenario file to sc: `key: value` lines with the keys
// of Keys, `#` comments, blank lines ignored, the Repeatable keys (fault)
// repeatable; any other key given twice is refused. Errors name the file and line.
func (sc *Scenario) LoadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("scenario: %w", err)
	}
	defer f.Close()
	sn := bufio.NewScanner(f)
	line := 0
	seen := map[string]int{} // key -> the line that gave it
	for sn.Scan() {
		line++
		text, k, v, ok := ScenarioLine(sn.Text())
		if text == "" {
			continue
		}
		if !ok {
			return fmt.Errorf("%s:%d: want 'key: value', got %q", path, line, text)
		}
		if first, dup := seen[k]; dup && !repeatable(k) {
			return fmt.Errorf("%s:%d: %s given twice (first on line %d); give each key once", path, line, k, first)
		}
		seen[k] = line
		if err := sc.Set(k, v); err != nil {
			return fmt.Errorf("%s:%d: %v", path, line, err)
		}
	}
	if err := sn.Err(); err != nil {
		return fmt.Errorf("scenario %s: %w", path, err)
	}
	return nil
}

// MaxMemory is the most memory a run's estimate (EstimateMemory) may
// reach before Check refuses it.
const MaxMemory = 16e9

// Memory model, measured on the reference machine with specs/baseline.stack
// (peak RSS): 2,000 nodes in 10 groups each took 343 MB, about 17 KB a
// membership; 3.6 million deliveries took 129 MB, about 36 bytes each.
const (
	bytesPerMembership = 20e3
	bytesPerDelivery   = 40
	bytesBase          = 50e6
)

// EstimateMemory is a run's expected peak memory in bytes: per-membership
// layer state plus the harness's per-delivery records.
func EstimateMemory(sc Scenario) int64 {
	return int64(bytesBase + bytesPerMembership*float64(sc.Nodes)*float64(sc.GroupsPerNode) + bytesPerDelivery*Deliveries(sc))
}

// Deliveries is a run's expected packet deliveries (data and control):
// each sender casts Rate messages a second for Duration, each to one group
// of GroupSize-1 other members, and control traffic roughly doubles that.
// At rate max the senders' rate is bounded by MaxBurst per MaxQuantum, or
// by the capacity's packets per second when one is set.
func Deliveries(sc Scenario) float64 {
	senders := float64(sc.Senders)
	if sc.Senders == 0 {
		senders = float64(sc.Nodes)
	}
	rate := sc.Rate
	if rate == 0 {
		rate = float64(sc.MaxBurst) / MaxQuantum.Seconds()
		if c, err := ParseCapacity(sc.Capacity); err == nil && c.SendPPS > 0 {
			rate = min(rate, c.SendPPS)
		}
	}
	return 2 * senders * rate * sc.Duration.Seconds() * float64(max(sc.GroupSize-1, 1))
}

// Groups is the number of groups, Nodes*GroupsPerNode/GroupSize.
func (sc *Scenario) Groups() int { return sc.Nodes * sc.GroupsPerNode / sc.GroupSize }

// Check validates the scenario as a whole (each value was checked by Set).
func (sc *Scenario) Check() error {
	n, d, s := sc.Nodes, sc.GroupsPerNode, sc.GroupSize
	switch {
	case n < 1:
		return fmt.Errorf("scenario: nodes must be at least 1")
	case s < 1 || d < 1:
		return fmt.Errorf("scenario: group-size and groups-per-node must be at least 1")
	case s == 1:
		return fmt.Errorf("scenario: group-size 1: a group needs at least 2 members, a sender and someone to deliver to")
	case s > n:
		return fmt.Errorf("scenario: group size %d is larger than the number of nodes %d", s, n)
	case sc.Senders > n:
		return fmt.Errorf("scenario: %d senders but only %d nodes", sc.Senders, n)
	case sc.MsgSize < PayloadHeader:
		return fmt.Errorf("scenario: msg-size %d is below the %d-byte payload header", sc.MsgSize, PayloadHeader)
	case sc.Duration <= 0:
		return fmt.Errorf("scenario: duration must be positive")
	case sc.Warmup >= sc.Duration:
		return fmt.Errorf("scenario: warmup %v leaves nothing of the %v of sending to measure", sc.Warmup, sc.Duration)
	}
	if (n*d)%s != 0 {
		return fmt.Errorf("scenario: %d nodes x %d groups per node = %d memberships, not divisible by group size %d%s",
			n, d, n*d, s, suggestShape(n, d, s))
	}
	if d > n*d/s {
		// every group would need the node more than once
		return fmt.Errorf("scenario: %d groups per node but only %d groups exist", d, n*d/s)
	}
	for _, f := range sc.Faults {
		ft, err := ParseFault(f)
		if err != nil {
			return fmt.Errorf("scenario: fault %q: %v", f, err)
		}
		ids := slices.Concat(ft.Sets...) // a partition's sides
		if ft.Kind == FaultCrash || ft.Kind == FaultFreeze {
			ids = []event.NodeID{ft.Node}
		}
		for _, id := range ids {
			if id < 1 || int(id) > n {
				return fmt.Errorf("scenario: fault %q names node %v, but nodes are n1..n%d", f, id, n)
			}
		}
		if end := sc.Duration + sc.Drain; ft.At.Duration() >= end {
			return fmt.Errorf("scenario: fault %q comes at %v, after the run ends (duration %v + drain %v = %v); give a time before %v",
				f, ft.At.Duration(), sc.Duration, sc.Drain, end, end)
		}
	}
	if b := EstimateMemory(*sc); b > MaxMemory {
		return fmt.Errorf("scenario: refused: this workload would need about %.3g GB of memory (%d memberships, about %.3g packet deliveries); the limit is %.0f GB: use fewer nodes or groups per node, a lower rate or a shorter duration",
			float64(b)/1e9, sc.Nodes*sc.GroupsPerNode, Deliveries(*sc), float64(MaxMemory)/1e9)
	}
	if sc.Loss != "" && sc.Loss != "none" {
		if _, err := ParseLoss(sc.Loss); err != nil {
			return fmt.Errorf("scenario: loss: %v", err)
		}
	}
	return sc.checkSites()
}

// suggestShape proposes group sizes and groups-per-node values that fit.
func suggestShape(n, d, s int) string {
	var sizes []string
	for delta := 1; delta <= n && len(sizes) < 3; delta++ {
		for _, c := range []int{s - delta, s + delta} {
			if c >= 2 && c <= n && (n*d)%c == 0 && len(sizes) < 3 {
				sizes = append(sizes, strconv.Itoa(c))
			}
		}
	}
	dd := 0
	for c := d + 1; c <= d+s; c++ {
		if (n*c)%s == 0 {
			dd = c
			break
		}
	}
	var parts []string
	if len(sizes) > 0 {
		parts = append(parts, "--group-size "+strings.Join(sizes, " or "))
	}
	if dd > 0 {
		parts = append(parts, fmt.Sprintf("--groups-per-node %d", dd))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; try " + strings.Join(parts, ", or ")
}

// Describe is the scenario as one line of key=value pairs (the keys of
// Keys), for reports.
func (sc *Scenario) Describe() string {
	parts := []string{
		fmt.Sprintf("nodes=%d", sc.Nodes),
		fmt.Sprintf("groups-per-node=%d", sc.GroupsPerNode),
		fmt.Sprintf("group-size=%d", sc.GroupSize),
		fmt.Sprintf("senders=%s", sendersText(sc.Senders)),
		"rate=" + sc.RateText(),
		fmt.Sprintf("msg-size=%d", sc.MsgSize),
		"duration=" + sc.Duration.String(),
	}
	if sc.Warmup > 0 {
		parts = append(parts, "warmup="+sc.Warmup.String())
	}
	parts = append(parts,
		"drain="+sc.Drain.String(),
		"loss="+orNone(sc.Loss),
		"latency="+sc.Latency.String(),
		"jitter="+sc.Jitter.String(),
	)
	if sc.Capacity != "" {
		parts = append(parts, "capacity="+sc.Capacity)
	}
	parts = append(parts, fmt.Sprintf("seed=%d", sc.Seed))
	for _, f := range sc.Faults {
		parts = append(parts, "fault="+f)
	}
	sites, wans := sc.siteTexts()
	for _, t := range sites {
		parts = append(parts, "site="+t)
	}
	for _, t := range wans {
		parts = append(parts, "wan="+strings.ReplaceAll(t, " ", ","))
	}
	return strings.Join(parts, " ")
}

// Flags is the scenario as command-line flags of stacktool run, in the
// order of Keys: pairs of a flag ("--nodes") and its value. Run with them,
// on top of Default, they give back sc.
func (sc *Scenario) Flags() [][2]string {
	out := [][2]string{
		{"--nodes", strconv.Itoa(sc.Nodes)},
		{"--groups-per-node", strconv.Itoa(sc.GroupsPerNode)},
		{"--group-size", strconv.Itoa(sc.GroupSize)},
		{"--senders", sendersText(sc.Senders)},
		{"--rate", sc.RateText()},
		{"--msg-size", strconv.Itoa(sc.MsgSize)},
		{"--duration", sc.Duration.String()},
	}
	if sc.Warmup > 0 {
		out = append(out, [2]string{"--warmup", sc.Warmup.String()})
	}
	out = append(out, [][2]string{
		{"--drain", sc.Drain.String()},
		{"--loss", orNone(sc.Loss)},
		{"--latency", sc.Latency.String()},
		{"--jitter", sc.Jitter.String()},
	}...)
	if sc.Capacity != "" {
		out = append(out, [2]string{"--capacity", sc.Capacity})
	}
	out = append(out, [2]string{"--seed", strconv.FormatUint(sc.Seed, 10)})
	for _, f := range sc.Faults {
		out = append(out, [2]string{"--fault", f})
	}
	out = append(out, [2]string{"--max-burst", strconv.Itoa(sc.MaxBurst)})
	sites, wans := sc.siteTexts()
	for _, t := range sites {
		out = append(out, [2]string{"--site", t})
	}
	for _, t := range wans {
		out = append(out, [2]string{"--wan", t})
	}
	return out
}

func sendersText(k int) string {
	if k == 0 {
		return "all"
	}
	return strconv.Itoa(k)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// keyNames returns the names of Keys (for tests and help).
func keyNames() []string {
	out := make([]string, len(Keys))
	for i, k := range Keys {
		out[i] = k.Name
	}
	return slices.Clip(out)
}

// Clear empties the list a repeatable key collects (fault, site, wan), so
// that values given again replace the file's; other keys are left alone.
func (sc *Scenario) Clear(key string) {
	switch key {
	case "fault":
		sc.Faults = nil
	case "site":
		sc.Sites = nil
	case "wan":
		sc.WAN = nil
	}
}

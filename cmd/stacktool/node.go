package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/experiment/udprun"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/udp"
)

// Flags every real-network command shares.
var (
	logLevelFlag = &cli.StringFlag{Name: "log-level", Value: "info",
		Usage: "debug (every protocol line of every layer), info (views, joins, failures, delivery counts), warn or error"}
	mcastIfFlag   = &cli.StringFlag{Name: "mcast-if", Usage: "network interface for multicast", Value: "lo"}
	mcastPortFlag = &cli.IntFlag{Name: "mcast-port", Usage: "UDP port of every group's multicast channel (the same for every node of a system)", Value: udp.DefaultMulticastPort}
	seedFlag      = &cli.Uint64Flag{Name: "seed", Usage: "seed of the stack's random sources (default: the node id, so the same node draws the same numbers on every run; " +
		"gms draws the node's incarnation from it, so a node restarted under the same id before the service declared its previous life failed needs another seed)"}
)

// wallEpoch is time zero of the stack clocks of `stacktool node` and
// `stacktool gms`: the Unix epoch, not the process's start. auth starts its
// sequence numbers from the clock, so a process restarted under its old id,
// or the new leader of a replicated service (`gms --etcd --key-file`),
// sends above what receivers accepted from the process before it and never
// reuses an AES-GCM nonce; with a clock that started at zero in every
// process, the new leader's numbers fell below the receivers' replay window
// and its views were refused (TestEtcdFailoverAuth, once in CI). Send
// stamps also compare across processes on one host.
var wallEpoch = time.Unix(0, 0)

// newNode runs a stack of `stacktool node` or `gms` on its own goroutine,
// its clock reading from wallEpoch.
func newNode(sc stack.Config) (*stack.Node, error) {
	return stack.NewNode(stack.NodeConfig{Stack: sc, Epoch: wallEpoch})
}

func init() {
	commands = append(commands, &cli.Command{
		Name:  "node",
		Usage: "run one real node over UDP: join groups through a membership service (stacktool gms) and print views and deliveries",
		Description: "Builds the stack of --spec (it must end in gms), joins the groups of --join through the service at\n" +
			"--gms, logs every view installed and, every --report, how many messages it delivered. With --cast it\n" +
			"multicasts that many messages per second over its groups in turn. Multicast goes out on --mcast-if\n" +
			"(loopback by default) to the groups' channels at --mcast-port, as every stacktool command does.\n" +
			"SIGINT or SIGTERM leave the groups and stop the node. --log-level debug shows every layer's protocol lines.\n" +
			"--site places the node in a Spread site (specs/spread.stack); give the representatives of other sites with --peer,\n" +
			"and start every node before the first cast (--cast-members) if every node must get every cast: a late joiner gets what was cast from its join on.\n" +
			"Example: stacktool node --spec specs/gms.stack --gms 127.0.0.1:7000 --join news,sports --id 1\n" +
			"Example: stacktool node --spec specs/spread.stack --gms 127.0.0.1:7000 --join g --id 3 --site 2 --listen 127.0.0.1:7003 --peer 1=127.0.0.1:7001",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "spec", Usage: "stack spec or spec file; its bottom layer must be gms", Required: true},
			&cli.StringFlag{Name: "gms", Usage: "UDP address of the membership service (stacktool gms --listen)", Required: true},
			&cli.StringFlag{Name: "join", Usage: "comma-separated group names to join (1 to 200 bytes each)"},
			&cli.UintFlag{Name: "id", Usage: "this node's id (1 to 4294967279; default: from the process id)"},
			&cli.StringFlag{Name: "listen", Usage: "UDP address for unicast", Value: "127.0.0.1:0"},
			&cli.UintFlag{Name: "site", Usage: fmt.Sprintf("Spread site (LAN) this node is in, 0 to %d: membership learns it with the join and sends site views; hop and ring read it", maxNodeSite)},
			&cli.StringSliceFlag{Name: "peer", Usage: "ID=HOST:PORT, repeatable: another node's unicast address, pinned. Nodes learn each other's address from traffic, " +
				"but representatives of different sites share no multicast channel, so each needs the other's (or another site's) here"},
			mcastIfFlag, mcastPortFlag, seedFlag, logLevelFlag,
			&cli.DurationFlag{Name: "wait", Usage: "how long to wait for the service's first views before giving up", Value: 5 * time.Second},
			&cli.Float64Flag{Name: "cast", Usage: "messages per second to multicast, over the joined groups in turn (0: none)"},
			&cli.IntFlag{Name: "cast-members", Usage: "start casting half a second after every joined group's view has at least this many members (0: at once). " +
				"with hop (specs/spread.stack) a node that joins later gets only what is cast from its join on (state transfer)"},
			&cli.IntFlag{Name: "size", Usage: "payload bytes per message cast (at least the 32-byte stamp)", Value: 100},
			&cli.DurationFlag{Name: "report", Usage: "interval between delivery count lines", Value: time.Second},
			&cli.StringFlag{Name: "stat", Usage: "serve live counters over HTTP at this loopback address (read them with stacktool stat ADDR)"},
		},
		Action: nodeCmd,
	})
}

// Bounds of a node's own workload.
const (
	maxCastRate = 1000000
	maxCastSize = 60000
	// castBurst bounds the casts made in one wake-up when the node is
	// behind its rate; the rest of the backlog is skipped.
	castBurst = 1000
	// castSettle is the wait after --cast-members is reached before the
	// first cast: the other nodes install the same view, and a site's
	// members the new ring, within it.
	castSettle = 500 * time.Millisecond
	// maxNodeSite is the largest site id, as scenario files' site: lines
	// allow (hop keeps site sets in 64-bit masks).
	maxNodeSite = 63
)

// allHave reports whether the view of every group of gs has at least n
// members.
func allHave(views map[event.GroupID]*event.ViewInfo, gs []event.GroupID, n int) bool {
	for _, g := range gs {
		if v := views[g]; v == nil || len(v.Members) < n {
			return false
		}
	}
	return true
}

// parsePeers parses --peer values (ID=HOST:PORT) into pinned address book
// entries; self and the service's id are refused (their addresses are
// --listen and --gms).
func parsePeers(vs []string, self, service event.NodeID) (map[event.NodeID]*net.UDPAddr, error) {
	book := map[event.NodeID]*net.UDPAddr{}
	for _, v := range vs {
		id, addr, ok := strings.Cut(v, "=")
		n, err := strconv.ParseUint(strings.TrimSpace(id), 10, 32)
		if !ok || err != nil || n == 0 {
			return nil, fmt.Errorf("--peer %q: want ID=HOST:PORT with a node id from 1, e.g. 3=127.0.0.1:7003", v)
		}
		nid := event.NodeID(n)
		if nid == self || nid == service {
			return nil, fmt.Errorf("--peer %q: node %d is this node or the membership service (--listen, --gms)", v, n)
		}
		ua, err := net.ResolveUDPAddr("udp4", strings.TrimSpace(addr))
		if err != nil || ua.Port == 0 {
			return nil, fmt.Errorf("--peer %q: %q is not a UDP address HOST:PORT", v, addr)
		}
		book[nid] = ua
	}
	return book, nil
}

// newLogger is the real-network commands' logger: text records on
// standard output at the level of --log-level.
func newLogger(c *cli.Context) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	return slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: lv})), nil
}

// nodes prints a node list as "n1 n2 n3".
func nodes(ns []event.NodeID) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = n.String()
	}
	return strings.Join(s, " ")
}

func nodeCmd(c *cli.Context) error {
	log, err := newLogger(c)
	if err != nil {
		return err
	}
	groups, names := []event.GroupID(nil), map[event.GroupID]string{}
	if c.IsSet("join") {
		if groups, names, err = udprun.ParseGroups(c.String("join")); err != nil {
			return fmt.Errorf("--join: %v", err)
		}
	}
	if c.Duration("report") <= 0 || c.Duration("wait") <= 0 {
		return fmt.Errorf("--report %v and --wait %v must be positive", c.Duration("report"), c.Duration("wait"))
	}
	if r := c.Float64("cast"); r < 0 || r > maxCastRate || math.IsNaN(r) {
		return fmt.Errorf("--cast %v: want 0 to %d messages per second", r, maxCastRate)
	}
	if c.Int("cast-members") < 0 {
		return fmt.Errorf("--cast-members %d: want 0 or more", c.Int("cast-members"))
	}
	if sz := c.Int("size"); sz > maxCastSize {
		return fmt.Errorf("--size %d: at most %d bytes", sz, maxCastSize)
	}
	gmsAddr, err := net.ResolveUDPAddr("udp4", c.String("gms"))
	if err != nil {
		return fmt.Errorf("--gms %q: %v", c.String("gms"), err)
	}
	spec, err := loadSpec(c.String("spec"))
	if err != nil {
		return err
	}
	service, err := udprun.ServiceOf(spec)
	if err != nil {
		return err
	}
	reserved, err := udprun.DefaultService()
	if err != nil {
		return err
	}
	if id := c.Uint("id"); id > math.MaxUint32 || event.NodeID(id) >= reserved || event.NodeID(id) == service {
		return fmt.Errorf("--id %d: ids from %d up, and the service's %d, are reserved for the membership service", id, uint32(reserved), uint32(service))
	}
	self := event.NodeID(c.Uint("id"))
	if self == event.NoNode {
		self = event.NodeID(os.Getpid()%1000000 + 1)
	}
	seed := uint64(self)
	if c.IsSet("seed") {
		seed = c.Uint64("seed")
	}
	if c.Uint("site") > maxNodeSite {
		return fmt.Errorf("--site %d: want 0 to %d", c.Uint("site"), maxNodeSite)
	}
	site := event.SiteID(c.Uint("site"))
	peers, err := parsePeers(c.StringSlice("peer"), self, service)
	if err != nil {
		return err
	}
	entries, err := compose.Build(spec)
	if err != nil {
		return err
	}
	log = log.With("node", self.String())
	tcfg := udprun.TransportConfig(self, c.String("listen"), c.String("mcast-if"), c.Int("mcast-port"), service, gmsAddr, udprun.NodeLearn)
	if tcfg.Book == nil {
		tcfg.Book = map[event.NodeID]*net.UDPAddr{}
	}
	for n, a := range peers {
		tcfg.Book[n] = a
	}
	tr, err := udp.New(tcfg, nil)
	if err != nil {
		return err
	}
	defer tr.Close()

	name := func(g event.GroupID) string {
		if n, ok := names[g]; ok {
			return n
		}
		return g.String()
	}
	// Deliveries are counted on the node goroutine and read through Do.
	delivered := map[event.NodeID]int{}
	total := 0
	views := udprun.NewViews(self, groups)
	current := map[event.GroupID]*event.ViewInfo{} // for --stat, on the node goroutine too
	var fullAt atomic.Int64                        // when every joined group's view reached --cast-members (unix ns)
	app := stack.AppFuncs{
		OnDeliver: func(d stack.Delivery) { delivered[d.From]++; total++ },
		// Messages the stack gave up on are a broken promise unless their
		// sender failed; either way the log says so (tests read it).
		OnLost: func(l stack.Loss) {
			log.Warn("lost", "group", name(l.Group), "from", l.From.String(), "first", l.Range.First, "end", l.Range.End, "bounded", l.Range.Bounded)
		},
		OnView: func(v *event.ViewInfo) {
			views.View(v)
			current[v.Group] = v
			if fullAt.Load() == 0 && allHave(current, groups, c.Int("cast-members")) {
				fullAt.Store(time.Now().UnixNano())
			}
			log.Info("view", "group", name(v.Group), "id", v.ID, "members", nodes(v.Members), "joined", nodes(v.Joined), "left", nodes(v.Left))
		},
		// A view-synchronous stack (vsync) holds casts between Block and
		// the next view; the log shows when, so a pause has a cause.
		OnBlock: func(g event.GroupID, blocked bool) {
			if blocked {
				log.Info("block", "group", name(g))
			} else {
				log.Info("unblock", "group", name(g))
			}
		},
	}
	nd, err := newNode(stack.Config{
		Self: self, Layers: entries, Transport: tr, App: app, Seed: seed, Site: site,
		Log: stack.SlogLogger(log, slog.LevelDebug),
	})
	if err != nil {
		return err
	}
	tr.SetSink(nd)
	defer nd.Close() // leaves the groups (gms says goodbye), before the transport closes
	if addr := c.String("stat"); addr != "" {
		stop, err := serveStat(addr, &statSource{self: self, nd: nd, tr: tr, views: func() []StatView {
			var out []StatView
			for g, v := range current {
				sv := StatView{Group: name(g), ID: uint64(v.ID)}
				for _, m := range v.Members {
					sv.Members = append(sv.Members, m.String())
				}
				out = append(out, sv)
			}
			sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
			return out
		}})
		if err != nil {
			return err
		}
		defer stop()
	}
	log.Info("listening", "addr", tr.LocalAddr(), "service", gmsAddr, "groups", c.String("join"), "seed", seed, "site", uint32(site))

	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := views.Join(ctx, nd, gmsAddr, c.Duration("wait")); err != nil {
		if ctx.Err() != nil {
			log.Info("stopped")
			return nil
		}
		return err
	}

	var castEvery time.Duration
	if rate := c.Float64("cast"); rate > 0 && len(groups) > 0 {
		castEvery = time.Duration(float64(time.Second) / rate)
	}
	// Payloads carry the harness's stamp, so a bench worker in the same
	// group records them like its own runs' messages.
	payload := make([]byte, max(c.Int("size"), experiment.PayloadHeader))
	next := make([]uint64, len(groups)) // per group, the next stamp index
	k, cast, refused := 0, 0, 0
	report := func(msg string) {
		var froms []string
		var all int
		var net stack.NetStats
		_ = nd.Do(func(st *stack.Stack) {
			for n, cnt := range delivered {
				froms = append(froms, fmt.Sprintf("%v:%d", n, cnt))
			}
			all, net = total, st.Net()
		})
		sort.Strings(froms)
		args := []any{"messages", all, "from", strings.Join(froms, " "), "cast", cast}
		if refused > 0 {
			args = append(args, "refused", refused)
		}
		if net.Malformed > 0 {
			args = append(args, "malformed", net.Malformed)
		}
		log.Info(msg, args...)
	}
	now := time.Now()
	nextCast, nextReport := now, now.Add(c.Duration("report"))
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wake := nextReport
		if castEvery > 0 && nextCast.Before(wake) {
			wake = nextCast
		}
		timer.Reset(max(time.Until(wake), 0))
		select {
		case <-ctx.Done():
			report("stopped")
			return nil
		case <-nd.Done():
			return errors.New("node stopped")
		case <-timer.C:
		}
		now := time.Now()
		for burst := 0; castEvery > 0 && !now.Before(nextCast); burst++ {
			if burst == castBurst {
				nextCast = now.Add(castEvery) // too far behind: skip the backlog
				break
			}
			i := k % len(groups)
			k++
			nextCast = nextCast.Add(castEvery)
			if at := fullAt.Load(); !views.In(groups[i]) || at == 0 || now.UnixNano() < at+int64(castSettle) {
				continue
			}
			experiment.PutStamp(payload, experiment.Stamp{Sender: self, Group: groups[i], Index: next[i], Sent: nd.Now()})
			switch err := nd.Cast(groups[i], payload); {
			case err == nil:
				next[i]++
				cast++
			case errors.Is(err, stack.ErrBackpressure):
				refused++
			default:
				log.Warn("cast", "group", name(groups[i]), "err", err)
			}
		}
		if !now.Before(nextReport) {
			report("delivered")
			nextReport = nextReport.Add(c.Duration("report"))
		}
	}
}

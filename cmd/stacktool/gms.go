package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment/udprun"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/membership/etcdstore"
	"github.com/layercast/layercast/stack"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "gms",
		Usage: "run the membership service over UDP (what stacktool node --gms talks to)",
		Description: "Keeps every group's member list, takes join and leave requests, declares nodes whose heartbeats\n" +
			"stop for longer than their fd_timeout failed, and installs new views at most every --view-interval,\n" +
			"sending each node only what concerns it. It learns each node's address from the node's own packets\n" +
			"(at most --max-nodes at a time). Logs every view installed and every node that comes up, fails or\n" +
			"leaves. SIGINT or SIGTERM stop it.\n" +
			"With --etcd, several instances form one replicated service: they elect a leader through etcd, the\n" +
			"leader alone binds --listen (give every instance the same address: nodes need to know only that one)\n" +
			"and saves the membership to etcd before it acknowledges a request or sends a view; when it dies,\n" +
			"another instance takes over from the saved state within about --etcd-ttl, with view numbers that\n" +
			"never go back and no node removed.\n" +
			"Example: stacktool gms --listen 127.0.0.1:7000\n" +
			"         stacktool gms --listen 127.0.0.1:7000 --etcd 127.0.0.1:2379   (several times)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Usage: "UDP address to serve on, e.g. 127.0.0.1:7000"},
			&cli.DurationFlag{Name: "view-interval", Usage: "shortest time between two view installations (default: gms_service's view_interval)"},
			&cli.DurationFlag{Name: "fd-timeout", Usage: "failure timeout for nodes whose heartbeats declare none (default: gms_service's fd_timeout)"},
			&cli.IntFlag{Name: "indirect", Usage: "members asked to probe a suspect for the service before it is removed (SWIM ping-req; 0: none; default: gms_service's indirect)"},
			&cli.UintFlag{Name: "id", Usage: "the service's node id, as the nodes' specs name it (gms(service=N); default: gms's default)"},
			&cli.IntFlag{Name: "max-nodes", Usage: "node addresses the service keeps (the oldest heard is forgotten first)", Value: udprun.ServiceLearn},
			&cli.StringFlag{Name: "etcd", Usage: "comma-separated etcd endpoints: replicate the service on etcd (see above); default: one service, no etcd"},
			&cli.StringFlag{Name: "etcd-prefix", Usage: "etcd key prefix shared by the instances of one service", Value: etcdstore.DefaultPrefix},
			&cli.IntFlag{Name: "etcd-ttl", Usage: "seconds of the leader's etcd lease: a dead leader is replaced about this long after its death (etcd rounds up below its own minimum, 2 s by default)", Value: 2},
			&cli.StringFlag{Name: "key-file", Usage: "master key file of nodes whose specs end in auth: the service runs auth_service under it (--mac and --crypt as the nodes' auth)"},
			&cli.StringFlag{Name: "mac", Usage: "with --key-file: the nodes' auth(mac=...), gmac or hmac", Value: "gmac"},
			&cli.BoolFlag{Name: "crypt", Usage: "with --key-file: AES-GCM, as the nodes' auth(crypt=on)"},
			mcastIfFlag, seedFlag, logLevelFlag,
		},
		Action: gmsCmd,
	})
}

func gmsCmd(c *cli.Context) error {
	log, err := newLogger(c)
	if err != nil {
		return err
	}
	if c.String("listen") == "" {
		return fmt.Errorf("--listen ADDR is required (e.g. --listen 127.0.0.1:7000)")
	}
	if c.IsSet("fd-timeout") && c.Duration("fd-timeout") <= 0 || c.Duration("view-interval") < 0 {
		return fmt.Errorf("--fd-timeout must be positive and --view-interval not negative")
	}
	if n := c.Int("indirect"); n < 0 || n > 64 {
		return fmt.Errorf("--indirect %d: want 0 (no indirect probes) to 64", n)
	}
	if c.Int("max-nodes") <= 0 {
		return fmt.Errorf("--max-nodes %d: want at least 1", c.Int("max-nodes"))
	}
	self, err := udprun.DefaultService()
	if err != nil {
		return err
	}
	if c.IsSet("id") {
		if id := c.Uint("id"); id == 0 || id > math.MaxUint32 {
			return fmt.Errorf("--id %d: want 1 to %d", id, uint32(math.MaxUint32))
		}
		self = event.NodeID(c.Uint("id"))
	}
	seed := uint64(self)
	if c.IsSet("seed") {
		seed = c.Uint64("seed")
	}
	// The service is the gms_service layer alone, built like any spec:
	// its parameters' defaults apply where a flag is not given.
	var params []string
	for _, f := range [][2]string{{"view-interval", "view_interval"}, {"fd-timeout", "fd_timeout"}} {
		if c.IsSet(f[0]) {
			params = append(params, fmt.Sprintf("%s=%v", f[1], c.Duration(f[0])))
		}
	}
	if c.IsSet("indirect") {
		params = append(params, fmt.Sprintf("indirect=%d", c.Int("indirect")))
	}
	spec := "gms_service(" + strings.Join(params, ", ") + ")"
	if c.String("key-file") != "" { // the nodes run auth: tag and check membership packets
		a := compose.Call{Name: "auth_service", Args: []compose.Arg{{Key: "key_file", Value: c.String("key-file")}, {Key: "mac", Value: c.String("mac")},
			{Key: "crypt", Value: map[bool]string{true: "on", false: "off"}[c.Bool("crypt")]}}}
		spec += " : " + a.String()
	}
	sp, err := compose.Parse(spec)
	if err != nil {
		return err
	}
	if _, err := compose.BuildService(sp); err != nil {
		return err
	}
	log = log.With("node", "service")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	g := gmsServer{c: c, self: self, seed: seed, spec: spec, sp: sp, log: log}
	if !c.IsSet("etcd") {
		return g.serve(ctx, nil, nil)
	}
	var endpoints []string
	for _, e := range strings.Split(c.String("etcd"), ",") {
		if e = strings.TrimSpace(e); e != "" {
			endpoints = append(endpoints, e)
		}
	}
	if len(endpoints) == 0 {
		return fmt.Errorf("--etcd %q: want comma-separated etcd endpoints, e.g. 127.0.0.1:2379", c.String("etcd"))
	}
	if ttl := c.Int("etcd-ttl"); ttl < 1 || ttl > 3600 {
		return fmt.Errorf("--etcd-ttl %d: want 1 to 3600 seconds", ttl)
	}
	if c.String("etcd-prefix") == "" || !strings.HasPrefix(c.String("etcd-prefix"), "/") {
		return fmt.Errorf("--etcd-prefix %q: want a key prefix starting with /", c.String("etcd-prefix"))
	}
	err = etcdstore.Run(ctx, etcdstore.Config{
		Endpoints: endpoints, Prefix: c.String("etcd-prefix"), Name: c.String("listen"), TTL: c.Int("etcd-ttl"), Log: log,
	}, func(ctx context.Context, st *membership.ServiceState, store membership.Store) error {
		return g.serve(ctx, st, store)
	})
	if err != nil {
		return brokenf("%v", err)
	}
	log.Info("stopped")
	return nil
}

// gmsServer runs the service's stack: once, or once per leadership term
// of a replicated service.
type gmsServer struct {
	c    *cli.Context
	self event.NodeID
	seed uint64
	spec string
	sp   *compose.Spec
	log  *slog.Logger
}

// serve binds --listen and runs the service until ctx ends or the stack
// stops. With a store (--etcd), the service saves its state there and
// starts from st; the address may still be held by the previous leader's
// dying process for a moment, so binding is retried until ctx ends.
func (g *gmsServer) serve(ctx context.Context, st *membership.ServiceState, store membership.Store) error {
	c, self, log := g.c, g.self, g.log
	entries, err := compose.BuildService(g.sp)
	if err != nil {
		return err
	}
	if store != nil {
		// The service layer keeps the membership; a layer below it (auth_service
		// with --key-file) keeps nothing a new leader needs: its sequence
		// numbers start from the clock, above the dead leader's.
		var d membership.Durable
		for _, e := range entries {
			if x, ok := e.Layer.(membership.Durable); ok {
				d = x
				break
			}
		}
		if d == nil {
			return fmt.Errorf("spec %s: the service layer cannot keep its state in etcd", g.spec)
		}
		d.UseStore(store, st)
	}
	if store != nil {
		if err := waitFree(ctx, c.String("listen")); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	tr, err := udprun.NewTransport(self, c.String("listen"), c.String("mcast-if"), 0, 0, nil, c.Int("max-nodes"))
	if err != nil {
		return err
	}
	defer tr.Close()
	// The service's own log lines are the membership events a user runs
	// it for (views installed, nodes joined, failed, left, malformed
	// packets): they go out at info, unlike a node's protocol lines.
	nd, err := newNode(stack.Config{
		Self: self, Layers: entries, Transport: tr, Seed: g.seed, Log: stack.SlogLogger(log, slog.LevelInfo),
	})
	if err != nil {
		return err
	}
	tr.SetSink(nd)
	defer nd.Close()
	log.Info("listening", "addr", tr.LocalAddr(), "id", uint32(self), "spec", g.spec)
	select {
	case <-ctx.Done():
	case <-nd.Done():
	}
	// The service layer's counters, as it names them.
	args := []any{}
	_ = nd.Do(func(st *stack.Stack) {
		for _, lc := range st.Counters() {
			for i, n := range lc.Names {
				args = append(args, n, lc.Values[i])
			}
		}
	})
	if es, ok := store.(*etcdstore.Store); ok {
		args = append(args, "etcd_saves", es.Saves.Load(), "etcd_bytes", es.Bytes.Load())
	}
	msg := "stopped"
	if store != nil {
		msg = "stopped leading"
	}
	log.Info(msg, append(args, "addresses_learned", tr.Stats().Learned)...)
	return nil
}

// waitFree waits until the UDP address addr can be bound (the previous
// leader's process may still hold it for a moment) or ctx ends.
func waitFree(ctx context.Context, addr string) error {
	la, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %v", addr, err)
	}
	for {
		uc, err := net.ListenUDP("udp4", la)
		if err == nil {
			return uc.Close()
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("--listen %q: %v", addr, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

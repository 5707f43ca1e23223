package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment/udprun"
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
			"Example: stacktool gms --listen 127.0.0.1:7000",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Usage: "UDP address to serve on, e.g. 127.0.0.1:7000"},
			&cli.DurationFlag{Name: "view-interval", Usage: "shortest time between two view installations (default: gms_service's view_interval)"},
			&cli.DurationFlag{Name: "fd-timeout", Usage: "failure timeout for nodes whose heartbeats declare none (default: gms_service's fd_timeout)"},
			&cli.UintFlag{Name: "id", Usage: "the service's node id, as the nodes' specs name it (gms(service=N); default: gms's default)"},
			&cli.IntFlag{Name: "max-nodes", Usage: "node addresses the service keeps (the oldest heard is forgotten first)", Value: udprun.ServiceLearn},
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
	entries, err := compose.BuildService(sp)
	if err != nil {
		return err
	}
	tr, err := udprun.NewTransport(self, c.String("listen"), c.String("mcast-if"), 0, 0, nil, c.Int("max-nodes"))
	if err != nil {
		return err
	}
	defer tr.Close()
	log = log.With("node", "service")
	// The service's own log lines are the membership events a user runs
	// it for (views installed, nodes joined, failed, left, malformed
	// packets): they go out at info, unlike a node's protocol lines.
	nd, err := stack.NewNode(stack.NodeConfig{Stack: stack.Config{
		Self: self, Layers: entries, Transport: tr, Seed: seed, Log: stack.SlogLogger(log, slog.LevelInfo),
	}})
	if err != nil {
		return err
	}
	tr.SetSink(nd)
	defer nd.Close()
	log.Info("listening", "addr", tr.LocalAddr(), "id", uint32(self), "spec", spec)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
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
	log.Info("stopped", append(args, "addresses_learned", tr.Stats().Learned)...)
	return nil
}

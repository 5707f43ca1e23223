package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/layers/gms"
	"github.com/layercast/layercast/stack"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "gms",
		Usage: "run the membership service over UDP (what stacktool node --gms talks to)",
		Description: "Keeps every group's member list, takes join and leave requests, declares nodes whose heartbeats\n" +
			"stop for longer than their fd_timeout failed, and installs new views at most every --view-interval,\n" +
			"sending each node only what concerns it. Prints every view installed and every node that comes up,\n" +
			"fails or leaves. SIGINT or SIGTERM stop it.\n" +
			"Example: stacktool gms --listen 127.0.0.1:7000",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Usage: "UDP address to serve on, e.g. 127.0.0.1:7000"},
			&cli.DurationFlag{Name: "view-interval", Usage: "shortest time between two view installations", Value: gms.DefaultViewInterval},
			&cli.DurationFlag{Name: "fd-timeout", Usage: "failure timeout for nodes whose heartbeats declare none", Value: gms.DefaultFDTimeout},
		},
		Action: gmsCmd,
	})
}

func gmsCmd(c *cli.Context) error {
	if c.String("listen") == "" {
		return fmt.Errorf("--listen ADDR is required (e.g. --listen 127.0.0.1:7000)")
	}
	if c.Duration("fd-timeout") <= 0 || c.Duration("view-interval") < 0 {
		return fmt.Errorf("--fd-timeout must be positive and --view-interval not negative")
	}
	tr, err := newUDPNet(c.String("listen"), nil)
	if err != nil {
		return err
	}
	defer tr.close()
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Printf("%v %s\n", time.Since(start).Round(time.Millisecond), fmt.Sprintf(format, args...))
	}
	svc := gms.NewServiceLayer(gms.ServiceConfig{
		ViewInterval: c.Duration("view-interval"), FDTimeout: c.Duration("fd-timeout"), Log: logf,
	})
	r, err := newRunner(gms.ServiceNode, []stack.Entry{{Name: "gms_service", Layer: svc}}, tr, nil)
	if err != nil {
		return err
	}
	fmt.Printf("gms listening on %v (view interval %v, default fd_timeout %v)\n", tr.conn.LocalAddr(), c.Duration("view-interval"), c.Duration("fd-timeout"))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := r.runUntil(ctx, func() bool { return false }); err != nil {
		return err
	}
	st := svc.Service().Stats()
	fmt.Printf("stopped: %d view installations, %d views, %d nodes failed, %d malformed packets, %d nodes live\n",
		st.Commits, st.Views, st.Failed, st.Malformed+st.Unexpected, svc.Service().Live())
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/signal"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/udp"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "stat",
		Usage:     "print the live counters of a running node (stacktool node --stat ADDR)",
		ArgsUsage: "ADDR",
		Description: "Asks the node serving statistics at ADDR (host:port, loopback) for its counters: every layer's,\n" +
			"as its registration names and explains them, with the layer's own ratios and notes; the stack's\n" +
			"network counters; the transport's drops by cause; and the views of its groups. --every repeats\n" +
			"until interrupted; --prom prints the Prometheus text format the node also serves at /metrics.\n" +
			"Example: stacktool stat 127.0.0.1:7700 --every 1s",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "every", Usage: "print again at this interval until interrupted (0: once)"},
			&cli.BoolFlag{Name: "prom", Usage: "print the Prometheus text format"},
			&cli.BoolFlag{Name: "json", Usage: "print the JSON the node serves at /stats"},
		},
		Action: statCmd,
	})
}

// StatDoc is what a node serves at /stats (JSON).
type StatDoc struct {
	Node string `json:"node"`
	// AtNs is the node's clock (ns since its epoch) when the counters were
	// copied.
	AtNs    int64            `json:"at_ns"`
	Backlog int              `json:"backlog"`
	Layers  []StatLayer      `json:"layers"`
	Net     map[string]int64 `json:"net"`
	// Transport are the UDP transport's counters; Drops its and the
	// stack's drops by cause.
	Transport map[string]int64 `json:"transport"`
	Drops     map[string]int64 `json:"drops"`
	Views     []StatView       `json:"views"`
}

// StatLayer is one layer's counters, as its registration names and
// explains them, with what its Summarize makes of this node's values.
type StatLayer struct {
	Layer    string             `json:"layer"`
	Counters []StatCounter      `json:"counters"`
	Ratios   map[string]float64 `json:"ratios,omitempty"`
	Notes    []string           `json:"notes,omitempty"`
}

// StatCounter is one counter.
type StatCounter struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
	Doc   string `json:"doc,omitempty"`
}

// StatView is the view a node has of one of its groups.
type StatView struct {
	Group   string   `json:"group"`
	ID      uint64   `json:"id"`
	Members []string `json:"members"`
}

// statSource collects a node's StatDoc. views runs on the node goroutine
// (inside Node.Snapshot), where the node's view callbacks run too.
type statSource struct {
	self  event.NodeID
	nd    *stack.Node
	tr    *udp.Transport
	views func() []StatView
}

func (s *statSource) collect() (*StatDoc, error) {
	var views []StatView
	snap, err := s.nd.Snapshot(func(*stack.Stack) {
		if s.views != nil {
			views = s.views()
		}
	})
	if err != nil {
		return nil, err
	}
	doc := &StatDoc{Node: s.self.String(), AtNs: int64(snap.At), Backlog: snap.Backlog, Views: views,
		Net: fieldMap(snap.Net), Drops: map[string]int64{"malformed": snap.Net.Malformed, "no_channel": snap.Net.NoChannel}}
	if s.tr != nil {
		ts := s.tr.Stats()
		doc.Transport = fieldMap(ts)
		doc.Drops["kernel"] = ts.KernelDrops
		doc.Drops["send_queue"] = ts.SendDrops
		doc.Drops["send_error"] = ts.SendErrors
		doc.Drops["truncated"] = ts.Truncated
	}
	for _, lc := range snap.Layers {
		sl := StatLayer{Layer: lc.Layer}
		info, _ := compose.Lookup(lc.Layer)
		vals := map[string]int64{}
		for i, name := range lc.Names {
			c := StatCounter{Name: name, Value: lc.Values[i]}
			if info != nil {
				if d := info.Counter(name); d != nil {
					c.Doc = d.Doc
				}
			}
			vals[name] = lc.Values[i]
			sl.Counters = append(sl.Counters, c)
		}
		if info != nil && info.Summarize != nil {
			sum := info.Summarize(compose.Counters{Total: vals,
				Nodes: []compose.NodeCounters{{Node: s.self, Alive: true, Values: vals}}})
			sl.Ratios, sl.Notes = sum.Ratios, sum.Notes
		}
		doc.Layers = append(doc.Layers, sl)
	}
	return doc, nil
}

// fieldMap lists a struct's integer fields by snake_case name.
func fieldMap(v any) map[string]int64 {
	out := map[string]int64{}
	rv := reflect.ValueOf(v)
	for i := 0; i < rv.NumField(); i++ {
		if f := rv.Field(i); f.CanInt() {
			out[snake(rv.Type().Field(i).Name)] = f.Int()
		}
	}
	return out
}

// snake turns PacketsSent into packets_sent.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// serveStat serves src at addr, which must be a loopback address: /stats
// (JSON) and /metrics (Prometheus text). It returns a function that stops
// the server.
func serveStat(addr string, src *statSource) (func(), error) {
	host, _, err := splitAddr(addr)
	if err != nil {
		return nil, fmt.Errorf("--stat: %v", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--stat %s: statistics are served on loopback addresses only (127.0.0.1:PORT)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--stat: %v", err)
	}
	mux := http.NewServeMux()
	serve := func(contentType string, write func(io.Writer, *StatDoc)) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			doc, err := src.collect()
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", contentType)
			write(w, doc)
		}
	}
	mux.HandleFunc("/stats", serve("application/json", func(w io.Writer, doc *StatDoc) {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(doc)
	}))
	mux.HandleFunc("/metrics", serve("text/plain; version=0.0.4", writeProm))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}

// splitAddr checks a host:port address.
func splitAddr(addr string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(addr)
	if err == nil {
		port, err = strconv.Atoi(p)
	}
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("%q is not an address: want HOST:PORT, e.g. 127.0.0.1:7700", addr)
	}
	return host, port, nil
}

// writeProm writes doc in the Prometheus text format.
func writeProm(w io.Writer, doc *StatDoc) {
	node := promLabel(doc.Node)
	fmt.Fprintf(w, "# HELP layercast_layer_counter A layer's counter, named as the layer's registration names it.\n# TYPE layercast_layer_counter untyped\n")
	for _, l := range doc.Layers {
		for _, c := range l.Counters {
			fmt.Fprintf(w, "layercast_layer_counter{node=%s,layer=%s,counter=%s} %d\n", node, promLabel(l.Layer), promLabel(c.Name), c.Value)
		}
	}
	fmt.Fprintf(w, "# HELP layercast_layer_ratio A ratio a layer computes from its counters.\n# TYPE layercast_layer_ratio gauge\n")
	for _, l := range doc.Layers {
		for _, k := range sortedKeys(l.Ratios) {
			fmt.Fprintf(w, "layercast_layer_ratio{node=%s,layer=%s,ratio=%s} %g\n", node, promLabel(l.Layer), promLabel(k), l.Ratios[k])
		}
	}
	for _, part := range []struct {
		name, help string
		m          map[string]int64
	}{
		{"layercast_net", "The stack's counters at its bottom edge.", doc.Net},
		{"layercast_transport", "The UDP transport's counters.", doc.Transport},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", part.name, part.help, part.name)
		for _, k := range sortedKeys(part.m) {
			fmt.Fprintf(w, "%s{node=%s,stat=%s} %d\n", part.name, node, promLabel(k), part.m[k])
		}
	}
	fmt.Fprintf(w, "# HELP layercast_drops Packets dropped, by cause.\n# TYPE layercast_drops counter\n")
	for _, k := range sortedKeys(doc.Drops) {
		fmt.Fprintf(w, "layercast_drops{node=%s,cause=%s} %d\n", node, promLabel(k), doc.Drops[k])
	}
	fmt.Fprintf(w, "# HELP layercast_view_members Members of the node's view of a group.\n# TYPE layercast_view_members gauge\n")
	for _, v := range doc.Views {
		fmt.Fprintf(w, "layercast_view_members{node=%s,group=%s,view=\"%d\"} %d\n", node, promLabel(v.Group), v.ID, len(v.Members))
	}
	fmt.Fprintf(w, "# HELP layercast_backlog Application sends waiting in the stack.\n# TYPE layercast_backlog gauge\nlayercast_backlog{node=%s} %d\n", node, doc.Backlog)
}

// promLabel quotes a label value as the text format wants it.
func promLabel(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func statCmd(c *cli.Context) error {
	args, err := positional(c) // flags may follow the address too
	if err != nil {
		return fmt.Errorf("stat: %v", err)
	}
	every, prom, asJSON := c.Duration("every"), c.Bool("prom"), c.Bool("json")
	if len(args) != 1 {
		return fmt.Errorf("stat needs one address: stacktool stat HOST:PORT [--every 1s] [--prom]")
	}
	addr := args[0]
	if _, _, err := splitAddr(addr); err != nil {
		return fmt.Errorf("stat: %v", err)
	}
	if every < 0 {
		return fmt.Errorf("stat: --every %v must not be negative", every)
	}
	out, _ := writers(c)
	client := &http.Client{Timeout: 3 * time.Second}
	once := func() error {
		path := "/stats"
		if prom {
			path = "/metrics"
		}
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			var op *net.OpError
			if errors.As(err, &op) {
				err = op.Err
			}
			return brokenf("stat: no node serves statistics at %s (%v)", addr, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		if err != nil || resp.StatusCode != http.StatusOK {
			return brokenf("stat: %s answered %s %s", addr, resp.Status, strings.TrimSpace(string(body)))
		}
		if prom || asJSON {
			_, err = out.Write(body)
			return err
		}
		var doc StatDoc
		if err := json.Unmarshal(body, &doc); err != nil {
			return brokenf("stat: %s did not answer with statistics: %v", addr, err)
		}
		writeStat(out, &doc)
		return nil
	}
	if err := once(); err != nil || every == 0 {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			fmt.Fprintln(out)
			if err := once(); err != nil {
				return err
			}
		}
	}
}

// writeStat prints a StatDoc for people.
func writeStat(w io.Writer, d *StatDoc) {
	fmt.Fprintf(w, "node %s at %v, backlog %d\n", d.Node, time.Duration(d.AtNs).Round(time.Millisecond), d.Backlog)
	for _, v := range d.Views {
		fmt.Fprintf(w, "view %s #%d: %s\n", v.Group, v.ID, strings.Join(v.Members, " "))
	}
	var drops []string
	for _, k := range sortedKeys(d.Drops) {
		drops = append(drops, fmt.Sprintf("%s %d", k, d.Drops[k]))
	}
	fmt.Fprintf(w, "drops: %s\n", strings.Join(drops, ", "))
	fmt.Fprintf(w, "net: sent %d packets (%d B), received %d (%d B), control sent %d\n",
		d.Net["packets_sent"], d.Net["bytes_sent"], d.Net["packets_received"], d.Net["bytes_received"], d.Net["control_packets_sent"])
	for _, l := range d.Layers {
		fmt.Fprintf(w, "layer %s\n", l.Layer)
		for _, c := range l.Counters {
			fmt.Fprintf(w, "  %-24s %12d  %s\n", c.Name, c.Value, c.Doc)
		}
		for _, k := range sortedKeys(l.Ratios) {
			fmt.Fprintf(w, "  %-24s %12.3f\n", k, l.Ratios[k])
		}
		for _, n := range l.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
	}
}

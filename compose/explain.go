package compose

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/layercast/layercast/event"
)

// CounterKind says how a counter's value reads, so that a report can sum it
// over nodes (Count, Bytes, Nanos) or must not (Gauge, Peak).
type CounterKind int

const (
	// Count is a number of things that happened. It is the zero value.
	Count CounterKind = iota
	// Bytes is a number of bytes that went somewhere.
	Bytes
	// Nanos is a total duration in nanoseconds.
	Nanos
	// Gauge is a level at the end of the run (buffer bytes held now).
	Gauge
	// Peak is the largest level seen during the run.
	Peak
)

var kindNames = [...]string{Count: "count", Bytes: "bytes", Nanos: "ns", Gauge: "gauge", Peak: "peak"}

// String names the kind as `stacktool layers` prints it.
func (k CounterKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "?"
}

// CounterRole marks a counter a report reads without knowing the layer: the
// harness looks counters up by role, never by name.
type CounterRole int

const (
	// NoRole is an ordinary counter, shown only among the layer's own.
	NoRole CounterRole = iota
	// AckRole counts acknowledgements the layer sent; the report shows
	// acknowledgements per message for each layer that has one.
	AckRole
	// BufferPeakRole is the peak of the bytes the layer buffered; a node's
	// peak buffer is the sum over its layers of this counter.
	BufferPeakRole
)

// CounterDoc documents one counter a layer keeps (stack.Context.Counter).
type CounterDoc struct {
	// Name is the counter's name. A name with a placeholder in angle
	// brackets ("blocks:<node>") stands for the counters created at run
	// time whose names start with the text before '<'.
	Name string
	Kind CounterKind
	Role CounterRole
	// Doc says in a few words what it counts.
	Doc string
}

// Matches reports whether a counter's name is one this entry documents.
func (d CounterDoc) Matches(name string) bool {
	if i := strings.IndexByte(d.Name, '<'); i >= 0 {
		return strings.HasPrefix(name, d.Name[:i]) && len(name) > i
	}
	return name == d.Name
}

// Counter finds the entry that documents a counter's name, or nil.
func (l *LayerInfo) Counter(name string) *CounterDoc {
	for i := range l.Counters {
		if l.Counters[i].Matches(name) {
			return &l.Counters[i]
		}
	}
	return nil
}

// CountersWith returns the names of the layer's documented counters that
// have a role (fixed names only).
func (l *LayerInfo) CountersWith(role CounterRole) []string {
	var out []string
	for _, d := range l.Counters {
		if d.Role == role && !strings.Contains(d.Name, "<") {
			out = append(out, d.Name)
		}
	}
	return out
}

// NodeCounters are one node's counters of one layer at the end of a run.
type NodeCounters struct {
	Node event.NodeID
	// Alive is false for a node that had crashed or was frozen at the end.
	Alive bool
	// Values maps counter name to value.
	Values map[string]int64
}

// Counters is what a layer's Summarize reads: its counters summed over the
// nodes that run it, and each node's own, in node order.
type Counters struct {
	// Total maps counter name to its sum over nodes.
	Total map[string]int64
	// Nodes are the nodes that run the layer, in the harness's order.
	Nodes []NodeCounters
	// Messages is the number of application messages the run cast (the
	// base of per-message ratios), or 0 if it is not known.
	Messages int64
}

// Summary is what a layer says about its counters in a report.
type Summary struct {
	// Ratios are figures that are not sums (acknowledgements per message,
	// efficiency). A report shows them beside the layer's counters (JSON:
	// layers.<layer>.<name>).
	Ratios map[string]float64
	// Notes are lines for the report's notes; the report prefixes each
	// with the layer's name.
	Notes []string
	// Extra, when not nil, is added to the report's JSON as extra.<layer>.
	Extra any
	// Breakdowns are counts split by a key (retransmissions by link, for
	// example). A report shows each beside the layer's counters as one
	// object (JSON: layers.<layer>.<name>.<key>).
	Breakdowns map[string]map[string]int64
}

// Ratio records a ratio, making the map as needed.
func (s *Summary) Ratio(name string, v float64) {
	if s.Ratios == nil {
		s.Ratios = map[string]float64{}
	}
	s.Ratios[name] = v
}

// Notef adds a note made as fmt.Sprintf makes it.
func (s *Summary) Notef(format string, args ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, args...))
}

// Max is the largest value of a counter at any node: the figure that means
// something for peaks and per-node gauges, whose sum over nodes does not.
func (c Counters) Max(name string) int64 {
	var top int64
	for _, nc := range c.Nodes {
		top = max(top, nc.Values[name])
	}
	return top
}

// ServiceNeed is what a member layer asks of a run harness: a node other
// than the members, running a service stack, that the members talk to (the
// membership service for gms).
type ServiceNeed struct {
	// Node is the id the service must have.
	Node event.NodeID
	// Spec is the service node's own stack (its layers have ServiceRole);
	// its settings are read by the service layers' own registrations.
	Spec string
	// Poll is how often the harness should look whether the service has
	// done its work (installed the first views).
	Poll time.Duration
	// Describe names the settings that matter, for the report's notes.
	Describe string
	// RemovalBound is how long the service may take to remove a crashed
	// member, and RemovalWords how that bound is made up.
	RemovalBound time.Duration
	RemovalWords string
}

// Tool is a command a layer adds to stacktool (`stacktool <Name> --flag
// value ...`): advice computed from the layer's own model (mflow's
// ack_thresh for a workload, for example), so the command line needs no
// import of the layer.
type Tool struct {
	// Name is the subcommand's name; it must not clash with another.
	Name string
	// Usage is one line; Description the help text.
	Usage, Description string
	// Flags are the tool's flags, each read like a layer parameter.
	Flags []ToolFlag
	// Run does the work with the flags' values (Parse: defaults where not
	// given). Bad input is one error naming the flag.
	Run func(flags Params, out io.Writer) error
}

// ToolFlag is one flag of a Tool: a parameter (its type, units, bounds and
// default; Doc is the flag's usage line), parsed and checked by the code
// that reads layer parameters.
type ToolFlag struct {
	Param
	// Required flags must be given (Default is not used).
	Required bool
}

// Parse checks the flags given (name to text) and fills in the defaults of
// the others, as NewParams does for a layer. An error is one line naming the
// flag as a command line writes it (--name).
func (t *Tool) Parse(given map[string]string) (Params, error) {
	p := Params{Layer: t.Name, values: map[string]Value{}, given: map[string]bool{}}
	for i := range t.Flags {
		f := &t.Flags[i]
		p.schema = append(p.schema, f.Param)
		text, ok := given[f.Name]
		if !ok && f.Required {
			return p, fmt.Errorf("--%s is required", f.Name)
		}
		if !ok {
			text = f.Default
		}
		v, err := f.parse(text)
		if err != nil {
			return p, fmt.Errorf("--%v", err)
		}
		p.values[f.Name], p.given[f.Name] = v, ok
	}
	for k := range given {
		if _, ok := p.values[k]; !ok {
			return p, fmt.Errorf("%s has no flag --%s", t.Name, k)
		}
	}
	return p, nil
}

// checkServices builds, as a check, the service stack every layer of a
// member stack asks for (LayerInfo.Service), so `check` refuses a member
// spec whose service would not start, as `run` does.
func checkServices(ls []Checked) error {
	for _, l := range ls {
		need, err := l.ServiceNeed()
		if err != nil {
			return err
		}
		if need == nil {
			continue
		}
		sp, err := Parse(need.Spec)
		if err == nil {
			_, err = ExplainService(sp)
		}
		if err != nil {
			return fmt.Errorf("%s: the service it needs, %s, is refused: %w", l.Info.Name, need.Spec, err)
		}
	}
	return nil
}

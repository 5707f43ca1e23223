package compose

import (
	"fmt"
	"slices"
	"strings"

	"github.com/layercast/layercast/stack"
)

// propertyWords says each property the way an error message needs it.
var propertyWords = map[Property]string{
	Reliable:              "reliable delivery",
	Sequenced:             "sequenced delivery",
	FIFO:                  "FIFO order",
	Agreed:                "agreed (total) order",
	Safe:                  "safe delivery",
	Views:                 "group views",
	Regions:               "region views",
	ProbabilisticRecovery: "probabilistic recovery",
	FlowControl:           "flow control",
}

// Describe names the property in words ("reliable delivery"), as compose or
// the layer that introduced it describes it.
func (p Property) Describe() string {
	regMu.RLock()
	defer regMu.RUnlock()
	if w, ok := propertyWords[p]; ok {
		return w
	}
	return string(p)
}

// Check verifies a parsed member spec against the registry: every layer is
// known, belongs in a member's stack, appears once, its parameters exist and
// their values parse (units, ranges), every layer's needs are given by some
// layer below it, and every layer's factory accepts its parameters together
// (each layer is built once and dropped, so Check refuses exactly what Build
// refuses). The error is a *SpecError pointing at the offending name or
// value.
func Check(spec *Spec) error {
	_, err := Explain(spec)
	return err
}

// Checked is one layer of a checked spec: the call as written, what the
// layer registered, and its effective parameters (defaults filled in).
type Checked struct {
	Call   *Call
	Info   *LayerInfo
	Params Params
	// Notes are what the check found worth saying about this layer in
	// this stack that is not an error (a bound set below what the layer
	// beneath it may need: a choice, but one that can lose messages).
	Notes []string
}

// Explain checks the spec as Check does and returns its layers, top first,
// with their effective parameters (what `stacktool check -v` prints).
func Explain(spec *Spec) ([]Checked, error) {
	return explain(spec, MemberRole)
}

// ExplainString parses spec text (or loads a .stack file, as Load does)
// and explains it.
func ExplainString(src string) ([]Checked, error) {
	sp, err := Load(src)
	if err != nil {
		return nil, err
	}
	return Explain(sp)
}

// ExplainService is Explain for a service node's own stack: every layer must
// have ServiceRole.
func ExplainService(spec *Spec) ([]Checked, error) {
	return explain(spec, ServiceRole)
}

func explain(spec *Spec, role Role) ([]Checked, error) {
	ls, err := resolve(spec, role)
	if err != nil {
		return nil, err
	}
	for i := range ls {
		if _, err := ls[i].build(spec); err != nil {
			return nil, err
		}
	}
	if role == MemberRole {
		if err := checkServices(ls); err != nil {
			return nil, err
		}
	}
	return ls, nil
}

// Gives lists what a checked stack gives the application: every property
// its layers give (with their parameters), bottom layer first, each once.
func Gives(ls []Checked) []Property {
	var out []Property
	for i := len(ls) - 1; i >= 0; i-- {
		for _, g := range ls[i].Gives() {
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}

// Gives lists what the layer gives with its effective parameters: its
// Gives, then what its GivesWith adds.
func (c *Checked) Gives() []Property {
	if c.Info.GivesWith == nil {
		return c.Info.Gives
	}
	return append(slices.Clip(c.Info.Gives), c.Info.GivesWith(c.Params)...)
}

// resolve checks everything but the factories and returns each layer's info
// and effective parameters, top first. A layer whose role is not role is
// refused.
func resolve(spec *Spec, role Role) ([]Checked, error) {
	if spec == nil || len(spec.Layers) == 0 {
		f := "spec"
		if spec != nil {
			f = fileName(spec.File)
		}
		return nil, &SpecError{File: f, Msg: "empty spec: no layers"}
	}
	out := make([]Checked, len(spec.Layers))
	first := map[string]Pos{}
	for i := range spec.Layers {
		c := &spec.Layers[i]
		info, ok := Lookup(c.Name)
		if !ok {
			return nil, spec.errAt(c.Pos, "unknown layer %q; %s", c.Name, suggest(c.Name, layerNamesOf(role), "known layers"))
		}
		if info.Role != role {
			return nil, spec.errAt(c.Pos, "%s", roleMismatch(info, role))
		}
		// A layer appears once: its instance keys its counters and state by
		// its name, and no layer here gains from being stacked on itself
		// (a second reliable or fifo would only repeat the work of the
		// first). Use parameters, not repetition, to tune a layer.
		if at, dup := first[c.Name]; dup {
			return nil, spec.errAt(c.Pos, "layer %s appears twice (first at %d:%d); a stack holds each layer once", c.Name, at.Line, at.Col)
		}
		first[c.Name] = c.Pos
		for _, a := range c.Args {
			sp := info.Param(a.Key)
			if sp == nil {
				if len(info.Params) == 0 {
					return nil, spec.errAt(a.KeyPos, "layer %s has no parameter %q; it takes no parameters", c.Name, a.Key)
				}
				names := make([]string, len(info.Params))
				for j, p := range info.Params {
					names[j] = p.Name
				}
				if _, near := nearest(a.Key, names); !near {
					if other := ownerInSpec(spec, a.Key); other != "" {
						return nil, spec.errAt(a.KeyPos, "layer %s has no parameter %q; %s has one: did you mean %s(%s=%s)?", c.Name, a.Key, other, other, a.Key, quoteValue(a.Value))
					}
				}
				return nil, spec.errAt(a.KeyPos, "layer %s has no parameter %q; %s", c.Name, a.Key, suggest(a.Key, names, "its parameters are"))
			}
			if _, err := sp.ParseValue(a.Value); err != nil {
				return nil, spec.errAt(a.ValuePos, "%v", err)
			}
		}
		if info.Bottom != "" && i != len(spec.Layers)-1 {
			return nil, spec.errAt(c.Pos, "%s must be the bottom layer (%s is below it): %s", c.Name, spec.Layers[len(spec.Layers)-1].Name, info.Bottom)
		}
		params, err := NewParams(info, c.Given())
		if err != nil { // every given value parsed above, so a default is bad
			return nil, spec.errAt(c.Pos, "%v", err)
		}
		out[i] = Checked{Call: c, Info: info, Params: params}
	}
	// Bottom up: what the layers below give must cover each layer's needs.
	given := map[Property]bool{}
	hidden := map[Property]string{} // what a layer below took away, and why
	for i := len(out) - 1; i >= 0; i-- {
		for _, need := range out[i].Info.Needs {
			if given[need] {
				continue
			}
			c := &spec.Layers[i]
			if why, ok := hidden[need]; ok {
				return nil, spec.errAt(c.Pos, "%s needs %s below it; %s", c.Name, need.Describe(), why)
			}
			msg := fmt.Sprintf("%s needs %s below it; nothing below gives it", c.Name, need.Describe())
			above := ""
			for j := i - 1; j >= 0 && above == ""; j-- {
				if slices.Contains(out[j].Gives(), need) {
					above = spec.Layers[j].Name
				}
			}
			if above != "" {
				// Most likely a spec written bottom first.
				msg += fmt.Sprintf("; %s gives it but is above %s (specs list layers top first)", above, c.Name)
			} else if givers := giversOf(need, spec, role); len(givers) > 0 {
				msg += fmt.Sprintf(" (%s does: put it below %s)", strings.Join(givers, " or "), c.Name)
			}
			return nil, spec.errAt(c.Pos, "%s", msg)
		}
		for p, why := range out[i].Info.Hides {
			if given[p] {
				delete(given, p)
				hidden[p] = fmt.Sprintf("%s is given below %s, which does not pass it on: %s", p.Describe(), spec.Layers[i].Name, why)
			}
		}
		for _, g := range out[i].Gives() {
			given[g] = true
			delete(hidden, g)
		}
	}
	// A layer may refuse layers that give some property below it.
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			for _, g := range out[j].Info.Gives {
				if why, bad := out[i].Info.NotBelow[g]; bad {
					return nil, spec.errAt(spec.Layers[j].Pos, "%s cannot stand below %s: %s", spec.Layers[j].Name, spec.Layers[i].Name, why)
				}
			}
		}
	}
	FitSpreads(out)
	return out, nil
}

// FitSpreads fits each layer of ls (top first) that has a FitSpread to the
// Spread of the nearest layer below it that has one, as every check and
// build does: fifo's defaults over reliable(window=16384) would give up
// gaps reliable was still repairing and lose what it promised. Test kits
// that build layers without a whole spec call it to get the same values.
func FitSpreads(out []Checked) {
	for i := range out {
		fit := out[i].Info.FitSpread
		if fit == nil {
			continue
		}
		for j := i + 1; j < len(out); j++ {
			spread := out[j].Info.Spread
			if spread == nil {
				continue
			}
			n, words := spread(out[j].Params)
			var note string
			out[i].Params, note = fit(out[i].Params, n)
			if note != "" {
				out[i].Notes = append(out[i].Notes, fmt.Sprintf("%s below hands up to %d messages per sender past a gap (%s): %s", out[j].Info.Name, n-1, words, note))
			}
			break
		}
	}
}

// roleMismatch says why a layer cannot stand in a stack of the other role.
func roleMismatch(info *LayerInfo, want Role) string {
	if want == ServiceRole {
		return fmt.Sprintf("%s is a member layer, not a service's: a service node's stack holds only service layers (%s)",
			info.Name, strings.Join(layerNamesOf(ServiceRole), ", "))
	}
	msg := fmt.Sprintf("%s is a service layer: it is a service node's whole stack, never part of a member's (a member stack holding it delivers nothing)", info.Name)
	// A member layer whose name the service's starts with is most likely
	// the one meant (a service "x_service" is reached through "x").
	for _, n := range layerNamesOf(MemberRole) {
		if strings.HasPrefix(info.Name, n+"_") {
			msg += fmt.Sprintf("; did you mean %s, the member's side?", n)
			break
		}
	}
	return msg
}

// build makes the layer from its checked parameters, reporting a factory's
// refusal (or panic) at the layer's name.
func (c *Checked) build(spec *Spec) (l stack.Layer, err error) {
	defer func() {
		if r := recover(); r != nil {
			l, err = nil, spec.errAt(c.Call.Pos, "%s: its factory failed: %v", c.Call.Name, r)
		}
	}()
	l, err = c.Info.New(c.Params)
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, c.Call.Name+":") && !strings.HasPrefix(msg, c.Call.Name+" ") {
			msg = c.Call.Name + ": " + msg
		}
		return nil, spec.errAt(c.Call.Pos, "%s", msg)
	}
	if l == nil {
		return nil, spec.errAt(c.Call.Pos, "%s: its factory returned no layer", c.Call.Name)
	}
	return l, nil
}

// ownerInSpec names a layer of the spec that has a parameter key, or "".
func ownerInSpec(spec *Spec, key string) string {
	for _, c := range spec.Layers {
		if info, ok := Lookup(c.Name); ok && info.Param(key) != nil {
			return c.Name
		}
	}
	return ""
}

// giversOf lists the registered layers of the role, not in the spec, that
// give p.
func giversOf(p Property, spec *Spec, role Role) []string {
	var out []string
	for _, l := range Layers() {
		if l.Role == role && slices.Contains(l.Gives, p) && !slices.ContainsFunc(spec.Layers, func(c Call) bool { return c.Name == l.Name }) {
			out = append(out, l.Name)
		}
	}
	return out
}

// layerNamesOf lists the registered layers of a role, sorted.
func layerNamesOf(role Role) []string {
	var out []string
	for _, l := range Layers() {
		if l.Role == role {
			out = append(out, l.Name)
		}
	}
	return out
}

// Build checks the member spec and makes a fresh set of layers for one
// node, top first: one call per node, since layers hold per-node state.
func Build(spec *Spec) ([]stack.Entry, error) {
	return build(spec, MemberRole)
}

// BuildService is Build for a service node's own stack (every layer has
// ServiceRole).
func BuildService(spec *Spec) ([]stack.Entry, error) {
	return build(spec, ServiceRole)
}

func build(spec *Spec, role Role) ([]stack.Entry, error) {
	ls, err := resolve(spec, role)
	if err != nil {
		return nil, err
	}
	out := make([]stack.Entry, len(ls))
	for i := range ls {
		l, err := ls[i].build(spec)
		if err != nil {
			return nil, err
		}
		out[i] = stack.Entry{Name: ls[i].Call.Name, Layer: l}
	}
	return out, nil
}

// BuildString parses spec text (or loads a .stack file, as Load does),
// checks it and builds it.
func BuildString(src string) ([]stack.Entry, error) {
	sp, err := Load(src)
	if err != nil {
		return nil, err
	}
	return Build(sp)
}

// MustBuild is BuildString that panics on error (tests).
func MustBuild(src string) []stack.Entry {
	es, err := BuildString(src)
	if err != nil {
		panic(err)
	}
	return es
}

// Nearest returns the candidate that name is most likely a typo of (by edit
// distance, ignoring case), if one is close enough.
func Nearest(name string, candidates []string) (string, bool) { return nearest(name, candidates) }

// suggest finishes an "unknown name" message: the nearest candidate when one
// is close enough to be a typo, else the list of candidates (what is the
// list called: "known layers").
func suggest(name string, candidates []string, what string) string {
	if best, ok := nearest(name, candidates); ok {
		return fmt.Sprintf("did you mean %q?", best)
	}
	if len(candidates) == 0 {
		return "no layers are registered"
	}
	if strings.HasSuffix(what, " are") {
		return what + " " + strings.Join(candidates, ", ")
	}
	return what + ": " + strings.Join(candidates, ", ")
}

// nearest returns the candidate closest to name by edit distance
// (transpositions count as one edit), if it is close enough to be a typo:
// at most one edit for short names, up to a third of the length for longer.
func nearest(name string, candidates []string) (string, bool) {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(1, len([]rune(name))/3)
	if best == "" || bestD > limit {
		// A prefix ("rel" for "reliable") is also worth suggesting.
		for _, c := range candidates {
			if len(name) >= 3 && strings.HasPrefix(strings.ToLower(c), strings.ToLower(name)) {
				return c, true
			}
		}
		return "", false
	}
	return best, true
}

// editDistance is the optimal string alignment (restricted
// Damerau-Levenshtein) distance over runes: insertions, deletions,
// substitutions and swaps of adjacent characters cost one each.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	n, m := len(s), len(t)
	// Three rows: the one before the previous is needed for swaps.
	prev2 := make([]int, m+1)
	prev := make([]int, m+1)
	cur := make([]int, m+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= n; i++ {
		cur[0] = i
		for j := 1; j <= m; j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[m]
}

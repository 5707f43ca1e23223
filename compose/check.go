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
	FIFO:                  "FIFO order",
	Views:                 "group views",
	Regions:               "region views",
	ProbabilisticRecovery: "probabilistic recovery",
	FlowControl:           "flow control",
}

// Describe names the property in words ("reliable delivery").
func (p Property) Describe() string {
	if w, ok := propertyWords[p]; ok {
		return w
	}
	return string(p)
}

// Check verifies a parsed spec against the registry: every layer is known,
// appears once, its parameters exist and their values parse (units, ranges),
// and every layer's needs are given by some layer below it. The error is a
// *SpecError pointing at the offending name or value.
func Check(spec *Spec) error {
	_, err := check(spec)
	return err
}

// check returns each layer's info and checked parameters, top first.
func check(spec *Spec) ([]*LayerInfo, error) {
	if spec == nil || len(spec.Layers) == 0 {
		f := "spec"
		if spec != nil {
			f = fileName(spec.File)
		}
		return nil, &SpecError{File: f, Msg: "empty spec: no layers"}
	}
	infos := make([]*LayerInfo, len(spec.Layers))
	first := map[string]Pos{}
	for i := range spec.Layers {
		c := &spec.Layers[i]
		info, ok := Lookup(c.Name)
		if !ok {
			return nil, spec.errAt(c.Pos, "unknown layer %q; %s", c.Name, suggest(c.Name, layerNames(), "known layers"))
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
		infos[i] = info
	}
	// Bottom up: what the layers below give must cover each layer's needs.
	given := map[Property]bool{}
	for i := len(infos) - 1; i >= 0; i-- {
		for _, need := range infos[i].Needs {
			if given[need] {
				continue
			}
			c := &spec.Layers[i]
			msg := fmt.Sprintf("%s needs %s below it; nothing below gives it", c.Name, need.Describe())
			above := ""
			for j := i - 1; j >= 0 && above == ""; j-- {
				if slices.Contains(infos[j].Gives, need) {
					above = spec.Layers[j].Name
				}
			}
			if above != "" {
				// Most likely a spec written bottom first.
				msg += fmt.Sprintf("; %s gives it but is above %s (specs list layers top first)", above, c.Name)
			} else if givers := giversOf(need, spec); len(givers) > 0 {
				msg += fmt.Sprintf(" (%s does: put it below %s)", strings.Join(givers, " or "), c.Name)
			}
			return nil, spec.errAt(c.Pos, "%s", msg)
		}
		for _, g := range infos[i].Gives {
			given[g] = true
		}
	}
	return infos, nil
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

// giversOf lists the registered layers not in the spec that give p.
func giversOf(p Property, spec *Spec) []string {
	var out []string
	for _, l := range Layers() {
		if slices.Contains(l.Gives, p) && !slices.ContainsFunc(spec.Layers, func(c Call) bool { return c.Name == l.Name }) {
			out = append(out, l.Name)
		}
	}
	return out
}

func layerNames() []string {
	ls := Layers()
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name
	}
	return out
}

// Build checks the spec and makes a fresh set of layers for one node, top
// first: one call per node, since layers hold per-node state.
func Build(spec *Spec) ([]stack.Entry, error) {
	infos, err := check(spec)
	if err != nil {
		return nil, err
	}
	out := make([]stack.Entry, len(infos))
	for i, info := range infos {
		c := &spec.Layers[i]
		params, err := NewParams(info, c.Given())
		if err != nil { // Check parsed every value, so this is unexpected
			return nil, spec.errAt(c.Pos, "%v", err)
		}
		l, err := info.New(params)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, c.Name+":") && !strings.HasPrefix(msg, c.Name+" ") {
				msg = c.Name + ": " + msg
			}
			return nil, spec.errAt(c.Pos, "%s", msg)
		}
		if l == nil {
			return nil, spec.errAt(c.Pos, "%s: its factory returned no layer", c.Name)
		}
		out[i] = stack.Entry{Name: c.Name, Layer: l}
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

package compose

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/layercast/layercast/internal/units"
)

// ParamType is the type of a layer parameter; it decides which units a value
// may carry.
type ParamType int

// Parameter types.
const (
	// Int is a whole number.
	Int ParamType = iota
	// Float is a number.
	Float
	// Bool is true/false, on/off, yes/no.
	Bool
	// Duration carries a unit: ns, us, ms, s, m (e.g. 20ms).
	Duration
	// Size is bytes, with an optional unit: B, KB, MB, KiB, MiB (e.g. 50KB).
	Size
	// Percent is a share written 5% or 0.05; stored as a fraction 0..1.
	Percent
	// String is free text.
	String
	// Enum is one of Param.Choices.
	Enum
)

var typeNames = [...]string{Int: "int", Float: "float", Bool: "bool", Duration: "duration", Size: "size", Percent: "percent", String: "string", Enum: "enum"}

// String names the type.
func (t ParamType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "?"
}

// Param is one entry of a layer's parameter schema.
type Param struct {
	Name    string
	Type    ParamType
	Default string // as it would be written in a spec
	Doc     string // one line
	// Min and Max bound numeric values (in base units: count, seconds for
	// durations, bytes for sizes, fraction for percent) when Min < Max.
	Min, Max float64
	// Choices for Enum.
	Choices []string
}

// Value is a parsed parameter value.
type Value struct {
	I int64
	F float64
	B bool
	D time.Duration
	S string
}

// ParseValue parses text as a value of the parameter, checking units and
// bounds. Errors say what was expected.
func (p *Param) ParseValue(text string) (Value, error) { return p.parse(text) }

func (p *Param) parse(text string) (Value, error) {
	t := strings.TrimSpace(text)
	var v Value
	var num float64
	switch p.Type {
	case Int:
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return v, fmt.Errorf("%s wants a whole number, got %q", p.Name, text)
		}
		v.I, num = n, float64(n)
	case Float:
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return v, fmt.Errorf("%s wants a number, got %q", p.Name, text)
		}
		v.F, num = f, f
	case Bool:
		switch strings.ToLower(t) {
		case "true", "on", "yes", "1":
			v.B = true
		case "false", "off", "no", "0":
		default:
			return v, fmt.Errorf("%s wants on or off, got %q", p.Name, text)
		}
		return v, nil
	case Duration:
		d, err := ParseDuration(t)
		if err != nil {
			return v, fmt.Errorf("%s: %v", p.Name, err)
		}
		v.D, num = d, d.Seconds()
	case Size:
		n, err := ParseSize(t)
		if err != nil {
			return v, fmt.Errorf("%s: %v", p.Name, err)
		}
		v.I, num = n, float64(n)
	case Percent:
		f, err := ParsePercent(t)
		if err != nil {
			return v, fmt.Errorf("%s: %v", p.Name, err)
		}
		v.F, num = f, f
	case String:
		v.S = t
		return v, nil
	case Enum:
		for _, c := range p.Choices {
			if c == t {
				v.S = t
				return v, nil
			}
		}
		return v, fmt.Errorf("%s wants one of %s, got %q", p.Name, strings.Join(p.Choices, ", "), text)
	}
	if p.Min < p.Max && (num < p.Min || num > p.Max) {
		return v, fmt.Errorf("%s = %s is out of range [%s, %s]", p.Name, t, fmtBound(p, p.Min), fmtBound(p, p.Max))
	}
	return v, nil
}

func fmtBound(p *Param, b float64) string {
	switch p.Type {
	case Duration:
		return time.Duration(b * float64(time.Second)).String()
	case Percent:
		return strconv.FormatFloat(b*100, 'g', -1, 64) + "%"
	}
	return strconv.FormatFloat(b, 'g', -1, 64)
}

// ParseDuration parses a duration with a unit (ns, us, ms, s, m, h); a bare 0
// is allowed. See units.ParseDuration.
func ParseDuration(t string) (time.Duration, error) { return units.ParseDuration(t) }

// ParseSize parses a byte count with an optional unit: B, KB (1000), MB,
// GB, KiB (1024), MiB, GiB. See units.ParseSize.
func ParseSize(t string) (int64, error) { return units.ParseSize(t) }

// ParsePercent parses "5%" or a fraction "0.05" into 0.05. Values outside
// 0..100% are refused. See units.ParsePercent.
func ParsePercent(t string) (float64, error) { return units.ParsePercent(t) }

// Params are a layer's checked parameter values, defaults filled in. Getters
// panic on a name the layer did not declare (a programming error).
type Params struct {
	Layer  string
	values map[string]Value
	schema []Param
	given  map[string]bool   // set in the spec rather than defaulted
	fitted map[string]string // raised from its default to fit the stack, and why
}

// NewParams checks the given values (name to text) against the schema and
// fills in defaults. It is what Build uses; tests of a layer use it directly.
func NewParams(info *LayerInfo, given map[string]string) (Params, error) {
	p := Params{Layer: info.Name, values: map[string]Value{}, schema: info.Params, given: map[string]bool{}}
	for i := range info.Params {
		sp := &info.Params[i]
		text, ok := given[sp.Name]
		if !ok {
			text = sp.Default
		}
		p.given[sp.Name] = ok
		v, err := sp.parse(text)
		if err != nil {
			return p, err
		}
		p.values[sp.Name] = v
	}
	for k := range given {
		if info.Param(k) == nil {
			return p, fmt.Errorf("layer %s has no parameter %q", info.Name, k)
		}
	}
	return p, nil
}

// MustParams is NewParams for a registered layer that panics on error (tests).
func MustParams(layer string, given map[string]string) Params {
	info, ok := Lookup(layer)
	if !ok {
		panic("compose: no layer " + layer)
	}
	p, err := NewParams(info, given)
	if err != nil {
		panic(err)
	}
	return p
}

func (p Params) get(name string) Value {
	v, ok := p.values[name]
	if !ok {
		panic(fmt.Sprintf("compose: layer %s has no parameter %q", p.Layer, name))
	}
	return v
}

// Int returns an Int or Size parameter.
func (p Params) Int(name string) int { return int(p.get(name).I) }

// Float returns a Float or Percent parameter (percent as a fraction).
func (p Params) Float(name string) float64 { return p.get(name).F }

// Bool returns a Bool parameter.
func (p Params) Bool(name string) bool { return p.get(name).B }

// Duration returns a Duration parameter.
func (p Params) Duration(name string) time.Duration { return p.get(name).D }

// String returns a String or Enum parameter.
func (p Params) String(name string) string { return p.get(name).S }

// Schema returns the layer's parameter schema, in display order.
func (p Params) Schema() []Param { return p.schema }

// Given reports whether the parameter was set in the spec (rather than left
// at its default).
func (p Params) Given(name string) bool {
	p.get(name) // panics on an undeclared name, as the getters do
	return p.given[name]
}

// Fit returns p with the parameter name, which the spec left at its
// default, set to text instead, for the reason why (the layer below needs
// more: see LayerInfo.FitSpread). It panics on an undeclared name or a bad
// value (a programming error).
func (p Params) Fit(name, text, why string) Params {
	sp := p.param(name)
	v, err := sp.parse(text)
	if err != nil {
		panic(fmt.Sprintf("compose: fitting %s.%s: %v", p.Layer, name, err))
	}
	q := p
	q.values = maps.Clone(p.values)
	q.values[name] = v
	q.fitted = maps.Clone(p.fitted)
	if q.fitted == nil {
		q.fitted = map[string]string{}
	}
	q.fitted[name] = why
	return q
}

// Fitted says why the parameter was raised from its default to fit the
// stack (Fit), or "" if it was not.
func (p Params) Fitted(name string) string {
	p.get(name)
	return p.fitted[name]
}

func (p Params) param(name string) *Param {
	p.get(name)
	for i := range p.schema {
		if p.schema[i].Name == name {
			return &p.schema[i]
		}
	}
	return nil // unreachable: get found the name in the schema
}

// Text returns the parameter's effective value as it would be written in a
// spec, with its unit (20ms, 50KB, 5%, on).
func (p Params) Text(name string) string { return p.param(name).Format(p.get(name)) }

// Format writes v as a spec would hold it, with the parameter's unit (a
// string quoted when it must be): the spec parser and ParseValue read it
// back to the same value.
func (p *Param) Format(v Value) string {
	switch p.Type {
	case Int:
		return strconv.FormatInt(v.I, 10)
	case Float:
		return strconv.FormatFloat(v.F, 'g', -1, 64)
	case Bool:
		if v.B {
			return "on"
		}
		return "off"
	case Duration:
		// The spec grammar is ASCII: microseconds are written us.
		return strings.Replace(v.D.String(), "µs", "us", 1)
	case Size:
		return FormatSize(v.I)
	case Percent:
		// The shortest percentage that reads back as the same fraction
		// (0.07 is 7%, not 7.000000000000001%); a fraction that no
		// percentage rounds back to is written as the fraction itself.
		for prec := 1; prec <= 17; prec++ {
			t := strconv.FormatFloat(v.F*100, 'g', prec, 64) + "%"
			if f, err := ParsePercent(t); err == nil && f == v.F {
				return t
			}
		}
		return strconv.FormatFloat(v.F, 'g', -1, 64)
	}
	return quoteValue(v.S)
}

// FormatSize writes a byte count with the largest unit that keeps it whole
// (4MB, 64KiB, 1500B), as ParseSize reads it.
func FormatSize(n int64) string {
	if n != 0 {
		for _, u := range []struct {
			name string
			size int64
		}{{"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"KB", 1e3}} {
			if n%u.size == 0 {
				return strconv.FormatInt(n/u.size, 10) + u.name
			}
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

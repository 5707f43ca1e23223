package compose

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/layercast/layercast/stack"
)

// CountersOf documents the counters a layer declares as the tagged fields
// of a struct, the struct its Init binds with stack.Context.BindCounters:
// one CounterDoc per field with a `counter:"name"` tag, in field order, its
// Doc from the `doc` tag, its Kind from `kind` (count, bytes, ns, gauge or
// peak; count if absent) and its Role from `role` (ack or buffer_peak). Each
// counter is then named and explained once, beside the field that keeps it,
// and the layer cannot make a counter its registration does not document.
// v is the struct or a pointer to it. A missing doc or an unknown kind or
// role panics, like a schema error in Register.
func CountersOf(v any) []CounterDoc {
	t := reflect.TypeOf(v)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("compose: CountersOf wants a struct, got %T", v))
	}
	var out []CounterDoc
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := f.Tag.Lookup(stack.CounterTag)
		if !ok {
			continue
		}
		d := CounterDoc{Name: name, Doc: f.Tag.Get("doc")}
		kind, role := f.Tag.Get("kind"), f.Tag.Get("role")
		k := slices.Index(kindNames[:], kind)
		switch {
		case d.Doc == "":
			panic(fmt.Sprintf("compose: counter %q (%s.%s) has no doc tag", name, t, f.Name))
		case kind != "" && k < 0:
			panic(fmt.Sprintf("compose: counter %q: kind %q, want one of %v", name, kind, kindNames))
		case k > 0:
			d.Kind = CounterKind(k)
		}
		switch role {
		case "":
		case "ack":
			d.Role = AckRole
		case "buffer_peak":
			d.Role = BufferPeakRole
		default:
			panic(fmt.Sprintf("compose: counter %q: role %q, want ack or buffer_peak", name, role))
		}
		out = append(out, d)
	}
	return out
}

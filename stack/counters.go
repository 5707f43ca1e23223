package stack

import (
	"fmt"
	"reflect"
)

// CounterTag is the struct tag that names a counter field for
// Context.BindCounters (and for compose.CountersOf, which documents the same
// struct in the layer's registration): `counter:"delivered"`.
const CounterTag = "counter"

var counterType = reflect.TypeFor[*Counter]()

// BindCounters sets every *Counter field of the struct ptr points to that
// has a CounterTag to the layer's counter of that name (Counter), so a layer
// declares each counter once, as a tagged field, and binds them all in Init.
// It panics if ptr is not a pointer to a struct or a tagged field is not an
// exported *Counter: a programming error, met on the first Init.
func (c *Context) BindCounters(ptr any) {
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("stack: BindCounters wants a pointer to a struct, got %T", ptr))
	}
	v = v.Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name, ok := f.Tag.Lookup(CounterTag)
		if !ok {
			continue
		}
		if f.Type != counterType || !f.IsExported() || name == "" {
			panic(fmt.Sprintf("stack: field %s of %s: a %s tag needs an exported *stack.Counter field and a name", f.Name, v.Type(), CounterTag))
		}
		v.Field(i).Set(reflect.ValueOf(c.Counter(name)))
	}
}

package compose

import (
	"reflect"
	"testing"

	"github.com/layercast/layercast/stack"
)

// CountersOf reads what a layer's counter struct says of each counter, in
// field order, and skips untagged fields.
func TestCountersOf(t *testing.T) {
	type counters struct {
		Sent  *stack.Counter `counter:"sent" role:"ack" doc:"acks sent"`
		Peak  *stack.Counter `counter:"peak_buffer_bytes" kind:"peak" role:"buffer_peak" doc:"most bytes held"`
		Other *stack.Counter
		Wait  *stack.Counter `counter:"wait_ns" kind:"ns" doc:"time waited"`
	}
	want := []CounterDoc{
		{Name: "sent", Role: AckRole, Doc: "acks sent"},
		{Name: "peak_buffer_bytes", Kind: Peak, Role: BufferPeakRole, Doc: "most bytes held"},
		{Name: "wait_ns", Kind: Nanos, Doc: "time waited"},
	}
	for _, v := range []any{counters{}, &counters{}} {
		if got := CountersOf(v); !reflect.DeepEqual(got, want) {
			t.Errorf("CountersOf(%T) = %+v, want %+v", v, got, want)
		}
	}
}

// A counter without a doc, or with a kind or role that does not exist, is a
// programming error caught at registration.
func TestCountersOfRefusesBadTags(t *testing.T) {
	for name, v := range map[string]any{
		"no doc": struct {
			A *stack.Counter `counter:"a"`
		}{},
		"bad kind": struct {
			A *stack.Counter `counter:"a" kind:"level" doc:"x"`
		}{},
		"bad role": struct {
			A *stack.Counter `counter:"a" role:"nak" doc:"x"`
		}{},
		"not struct": 3,
		"nil":        nil,
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("CountersOf(%s) did not panic", name)
				}
			}()
			CountersOf(v)
		}()
	}
}

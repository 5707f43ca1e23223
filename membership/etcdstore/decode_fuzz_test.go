package etcdstore

import (
	"bytes"
	"testing"

	"github.com/layercast/layercast/internal/wiretest"
	"github.com/layercast/layercast/membership"
)

// FuzzDecodeRoundTrip decodes arbitrary bytes as a saved membership state:
// refused with ErrMalformed, or accepted and then saved and loaded again to
// the same bytes. Decoding allocates at most 4 MB plus 64 bytes per input
// byte, however many nodes, groups or views the state claims. Seeds:
// testdata/fuzz/FuzzDecodeRoundTrip.
func FuzzDecodeRoundTrip(f *testing.F) {
	b, err := Encode(sampleState())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var st *membership.ServiceState
		if !wiretest.Decoded(t, "state", b, func() (err error) { st, err = Decode(b); return err }, ErrMalformed) {
			return
		}
		enc, err := Encode(st)
		if err != nil {
			return // over MaxStateBytes once re-encoded (a shorter input form)
		}
		back, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-decoding %+v: %v", st, err)
		}
		again, err := Encode(back)
		if err != nil || !bytes.Equal(again, enc) {
			t.Fatalf("%+v saves as %x, then as %x (%v)", st, enc, again, err)
		}
	})
}

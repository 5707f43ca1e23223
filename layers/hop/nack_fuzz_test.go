package hop

import (
	"bytes"
	"slices"
	"testing"

	"github.com/layercast/layercast/internal/wirecodec"
	"github.com/layercast/layercast/internal/wiretest"
)

// FuzzNack decodes arbitrary bytes as a nack body with the codec the layer
// uses: refused with errMalformed, or accepted and then encoded and decoded
// to the same seqs. Decoding allocates at most 4 MB plus 64 bytes per input
// byte, however many seqs the body claims. Seeds: testdata/fuzz/FuzzNack.
func FuzzNack(f *testing.F) {
	codec := wirecodec.New(wirecodec.Options{Name: "hop", Malformed: errMalformed, MaxInitLen: 256})
	f.Fuzz(func(t *testing.T, b []byte) {
		var body nackBody
		if !wiretest.Decoded(t, "nack", b, func() error { return codec.Decode(b, &body) }, errMalformed) {
			return
		}
		var back nackBody
		if err := codec.Decode(bytes.Clone(codec.Encode(&body)), &back); err != nil || !slices.Equal(back.Seqs, body.Seqs) {
			t.Fatalf("nack round trip: %v became %v (%v)", body.Seqs, back.Seqs, err)
		}
	})
}

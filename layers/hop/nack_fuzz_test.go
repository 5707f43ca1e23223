package hop

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/layercast/layercast/internal/alloctest"
	"github.com/layercast/layercast/internal/wirecodec"
)

// FuzzNack decodes arbitrary bytes as a nack body with the codec the layer
// uses: refused with errMalformed, or accepted and then encoded and decoded
// to the same seqs. Decoding allocates at most 4 MB plus 64 bytes per input
// byte, however many seqs the body claims. Seeds: testdata/fuzz/FuzzNack.
func FuzzNack(f *testing.F) {
	codec := wirecodec.New(wirecodec.Options{Name: "hop", Malformed: errMalformed, MaxInitLen: 256})
	f.Fuzz(func(t *testing.T, b []byte) {
		var body nackBody
		var err error
		n := alloctest.Bytes(func() { err = codec.Decode(b, &body) })
		if bound := 4<<20 + 64*uint64(len(b)); n > bound {
			t.Fatalf("decoding a %d-byte nack allocated %d bytes, bound %d", len(b), n, bound)
		}
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("nack decode: %v does not wrap errMalformed", err)
			}
			return
		}
		var back nackBody
		if err := codec.Decode(bytes.Clone(codec.Encode(&body)), &back); err != nil || !slices.Equal(back.Seqs, body.Seqs) {
			t.Fatalf("nack round trip: %v became %v (%v)", body.Seqs, back.Seqs, err)
		}
	})
}

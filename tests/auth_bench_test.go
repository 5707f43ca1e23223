package tests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/layercast/layercast/compose"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
)

// BenchmarkAuthCost is the cost of auth on a cast-to-deliver path: the same
// stack without auth, with GMAC tags (the default), HMAC tags, and AES-GCM.
func BenchmarkAuthCost(b *testing.B) {
	key := filepath.Join(b.TempDir(), "k")
	if err := os.WriteFile(key, []byte(authKeyA), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, spec string }{
		{"plain", "fifo : reliable"},
		{"gmac", `fifo : reliable : auth(key_file="` + key + `")`},
		{"hmac", `fifo : reliable : auth(key_file="` + key + `", mac=hmac)`},
		{"gcm", `fifo : reliable : auth(key_file="` + key + `", crypt=on)`},
	} {
		b.Run(c.name, func(b *testing.B) {
			layertest.BenchCastDeliverSizes(b, func() []stack.Entry { return compose.MustBuild(c.spec) })
		})
	}
}

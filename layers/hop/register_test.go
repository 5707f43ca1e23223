package hop

import (
	"testing"

	"github.com/layercast/layercast/compose"
	_ "github.com/layercast/layercast/layers/fifo"
	_ "github.com/layercast/layercast/layers/reliable"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
)

// TestAgreedIsAProperty: a layer that needs agreed order is refused above
// a stack that gives only reliable FIFO delivery, with the property named
// in hop's words, and accepted above hop.
func TestAgreedIsAProperty(t *testing.T) {
	compose.Register(compose.LayerInfo{
		Name: "needsagreed", Summary: "test layer needing agreed order", Needs: []compose.Property{compose.Agreed},
		New: func(compose.Params) (stack.Layer, error) { return &stack.Base{}, nil },
	})
	layertest.CheckSpec(t, "needsagreed : fifo : reliable", "agreed (total) order")
	layertest.CheckSpec(t, "needsagreed : hop", "")
	compose.Register(compose.LayerInfo{
		Name: "needssafe", Summary: "test layer needing safe delivery", Needs: []compose.Property{compose.Safe},
		New: func(compose.Params) (stack.Layer, error) { return &stack.Base{}, nil },
	})
	layertest.CheckSpec(t, "needssafe : hop", "safe delivery")
	layertest.CheckSpec(t, "needssafe : hop(safe=on)", "")
}

// TestConfigCheck: settings that cannot work are one clear error.
func TestConfigCheck(t *testing.T) {
	ok := Config{LinkRate: 1, Bucket: 4096, Window: 8, MaxPending: 8, DeadAfter: 2, AckLong: 1, MaxQueue: 4}
	if err := ok.Check(); err != nil {
		t.Fatalf("Check(%+v) = %v", ok, err)
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.Window = 6 },
		func(c *Config) { c.MaxPending = 3 },
		func(c *Config) { c.DeadAfter = c.AckLong },
		func(c *Config) { c.Links = "1-1" },
		func(c *Config) { c.Bucket = 100 },
	} {
		c := ok
		bad(&c)
		if err := c.Check(); err == nil {
			t.Errorf("Check(%+v) = nil, want an error", c)
		}
	}
}

package reliable_test

import (
	"testing"

	_ "github.com/layercast/layercast/layers/all" // the layers the scripts' specs name
	"github.com/layercast/layercast/testbed/scripttest"
)

// TestScripts runs the scenario scripts in testdata/script (regenerate
// their expected output with go test -run TestScripts -rewrite).
func TestScripts(t *testing.T) { scripttest.RunFiles(t, "testdata/script/*.txt") }

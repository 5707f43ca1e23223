package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/layercast/layercast/compose"
)

// `stacktool layers` prints each layer's counters with what they mean, as
// the layer's registration documents them, in text and in JSON.
func TestLayersPrintCounters(t *testing.T) {
	info, ok := compose.Lookup("mflow")
	if !ok {
		t.Fatal("mflow is not registered")
	}
	var b bytes.Buffer
	if err := writeLayers(&b, []*compose.LayerInfo{info}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"counters:", "acks_sent", "count, acks", info.Counter("acks_sent").Doc, "blocks:<node>"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("layers output lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := writeLayersJSON(&b, []*compose.LayerInfo{info}); err != nil {
		t.Fatal(err)
	}
	var js []jsonLayer
	if err := json.Unmarshal(b.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	if len(js) != 1 || len(js[0].Counters) != len(info.Counters) {
		t.Fatalf("JSON counters = %+v, want mflow's %d", js, len(info.Counters))
	}
	for _, c := range js[0].Counters {
		if c.Name == "acks_sent" && (c.Role != "acks" || c.Kind != "count" || c.Doc == "") {
			t.Errorf("acks_sent in JSON = %+v", c)
		}
	}
}

package experiment

import (
	"encoding/json"
	"testing"
)

func TestLayerRatiosAppearInsideLayers(t *testing.T) {
	rep := &Report{Layers: map[string]map[string]int64{"mflow": {"acks_sent": 40, "casts": 100}}}
	rep.SetLayerRatio("mflow", "acks_per_msg", 0.4)
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Layers map[string]map[string]float64 `json:"layers"`
		Spec   *string                       `json:"spec"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	m := back.Layers["mflow"]
	if m["acks_per_msg"] != 0.4 || m["acks_sent"] != 40 || m["casts"] != 100 {
		t.Fatalf("layers.mflow = %v, want acks_per_msg 0.4 beside the counters", m)
	}
	if back.Spec == nil {
		t.Fatal("the other report fields were lost")
	}
	// Without ratios the plain form is used.
	plain, _ := json.Marshal(&Report{Layers: map[string]map[string]int64{"fifo": {"delivered": 3}}})
	if err := json.Unmarshal(plain, &back); err != nil || back.Layers["fifo"]["delivered"] != 3 {
		t.Fatalf("plain report: %s (%v)", plain, err)
	}
}

package tests

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/layers/mflow"
)

// TestMflowSpecRun runs specs/mflow.stack under specs/mflow.scenario (the
// paper's Figure 2(a) workload: 10 processes, one sender, 1 KB at 1000/s)
// through the experiment harness, as `stacktool run` does, and checks the
// report: everything delivered in order, mflow's counters under
// layers.mflow, and the summarizer's acknowledgements per message against
// equation 2.
func TestMflowSpecRun(t *testing.T) {
	rep, sc := simRun(t, "../specs/mflow.stack", "mflow.scenario")
	if !rep.DeliveredAll || rep.FIFOViolations != 0 || rep.Duplicates != 0 {
		t.Errorf("delivered_all %v, fifo_violations %d, duplicates %d (notes %q)", rep.DeliveredAll, rep.FIFOViolations, rep.Duplicates, rep.Notes)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Layers map[string]map[string]float64 `json:"layers"`
		Extra  struct {
			Mflow mflow.Summary `json:"mflow"`
		} `json:"extra"`
		Overhead struct {
			AcksPerMsgBy map[string]float64 `json:"acks_per_msg_by"`
		} `json:"overhead"`
	}
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	m := js.Layers["mflow"]
	if m["casts"] != float64(rep.MessagesSent) || m["acks_sent"] == 0 {
		t.Errorf("layers.mflow: casts %v (messages_sent %d), acks_sent %v", m["casts"], rep.MessagesSent, m["acks_sent"])
	}
	weight := float64(sc.MsgSize) + float64(mflow.EnsembleConfig().Overhead)
	want := mflow.AcksPerMsg(sc.GroupSize, weight, float64(mflow.EnsembleConfig().AckThresh))
	got := js.Extra.Mflow.AcksPerMsg
	t.Logf("acks per message %.4f (equation 2: %.4f), efficiency %.4f (equation 3: %.4f); notes %q", got, want,
		js.Extra.Mflow.Efficiency, mflow.Efficiency(sc.GroupSize, weight, float64(mflow.EnsembleConfig().AckThresh)), rep.Notes)
	if math.Abs(got-want)/want > 0.02 {
		t.Errorf("acks_per_msg %.4f, equation 2 gives %.4f", got, want)
	}
	if v, ok := m["acks_per_msg"]; ok && math.Abs(v-got) > 1e-3 {
		t.Errorf("layers.mflow.acks_per_msg %v, summarizer says %v", v, got)
	}
	// issue 13's must-hold: the table's acks row shows mflow's own acks
	// (reliable's apart), the same figure as layers.mflow.acks_per_msg
	v, ok := m["acks_per_msg"]
	if by := js.Overhead.AcksPerMsgBy["mflow"]; !ok || math.Abs(by-v) > 1e-3 {
		t.Errorf("layers.mflow.acks_per_msg %v (present %v), overhead.acks_per_msg_by.mflow %v: want the same", v, ok, by)
	}
	var tb strings.Builder
	if err := experiment.WriteTable(&tb, []*experiment.Report{rep}, false); err != nil {
		t.Fatal(err)
	}
	if row := fmt.Sprintf("mflow %.3f", v); !strings.Contains(tb.String(), row) {
		t.Errorf("the table's acks row does not show %q:\n%s", row, tb.String())
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.HasPrefix(n, "mflow:") }) {
		t.Errorf("no mflow note in the report: %q", rep.Notes)
	}
}

// TestMflowSpecNeedsFIFO: compose refuses mflow without FIFO order below.
func TestMflowSpecNeedsFIFO(t *testing.T) {
	for _, src := range []string{"mflow : reliable", "fifo : mflow : reliable", "mflow"} {
		spec, err := compose.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := compose.Check(spec); err == nil || !strings.Contains(err.Error(), "mflow needs") {
			t.Errorf("Check(%q) = %v, want mflow's needs refused", src, err)
		}
	}
	if _, err := compose.BuildString("mflow(window=50KB, ack_thresh=60KB) : fifo : reliable"); err == nil || !strings.Contains(err.Error(), "ack_thresh") {
		t.Errorf("ack_thresh above window: Build error %v", err)
	}
}

package reproduce

// mflowFig3 is the paper's Figure 3 stack: a 30 KB window, credit returned
// every 15 KB; the experiments set stagger.
const mflowFig3 = "mflow(window=30KB, ack_thresh=15KB) : fifo : reliable"

var mflow = Paper{
	Name:  "mflow",
	Title: "MFLOW: multicast flow control in Ensemble",
	Needs: "the mflow layer (issue 5)",
	Experiments: []Experiment{
		{
			ID: "eq2", Title: "one sender, a group of 10, 1 KB messages at 1000/s, window 50000, ack_thresh 25000 (Figure 2(a), equations 2 and 3)",
			Stacks: []string{"mflow.stack"}, Scenario: "mflow.scenario", Quick: []string{"duration=2s"},
			Measures: []Measure{
				{Metric: "acks per message", Field: "layers.mflow.acks_per_msg", Paper: "size*(n-1)/ack_thresh = 1100*9/25000 = 0.396 (eq. 2)", Rule: Rule{Kind: Near, A: 0.396, B: 0.05}},
				{Metric: "message efficiency", Field: "layers.mflow.efficiency", Paper: "1/(1 + 0.396) = 0.716 (eq. 3)", Rule: Rule{Kind: Near, A: 0.716, B: 0.05}},
			},
		},
		{
			ID: "eq2small", Title: "Figure 3's setting: 4 processes, one sender of 1 KB every ms, window 30 KB, ack_thresh 15 KB (equation 2)",
			Stacks: []string{mflowFig3}, Scenario: "mflow-fig3.scenario", Quick: []string{"duration=2s"},
			Measures: []Measure{
				{Metric: "acks per message", Field: "layers.mflow.acks_per_msg", Paper: "size*(n-1)/ack_thresh = 1100*3/15000 = 0.22 (eq. 2)", Rule: Rule{Kind: Near, A: 0.22, B: 0.05}},
			},
		},
		{
			ID: "stagger", Title: "Figure 3: the 3 receivers' acknowledgements without and with staggering",
			Stacks: []string{mflowFig3}, Scenario: "mflow-fig3.scenario", Quick: []string{"duration=2s"},
			Param: "mflow.stagger=off,on",
			Measures: []Measure{
				{Metric: "most acks at the sender within 1 ms", Field: "layers.mflow.ack_burst_max", Paper: "all n-1 = 3 together without staggering, 1 with it", Rule: Rule{Kind: Falls, A: 0.5}},
				{Metric: "acks within 1 ms of another", Unit: "%", Field: "layers.mflow.acks_crowded? / layers.mflow.acks_recv * 100", Paper: "a storm without staggering, spread out with it", Rule: Rule{Kind: Falls, A: 0.9}},
			},
		},
	},
}

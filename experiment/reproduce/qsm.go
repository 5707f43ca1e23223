package reproduce

// qsm is issue 10's "What must hold" as a table; it runs once layers/tokenring
// and its specs (specs/qsm.stack, specs/qsm-groups.scenario,
// specs/qsm-recovery.scenario) exist. Control traffic at the sender as the
// region grows is left to the layer's tests: the report has no per-node
// figure to read it from.
var qsm = Paper{
	Name:  "qsm",
	Title: "QuickSilver Scalable Multicast (QSM): regions, token rings, many groups",
	Needs: "the tokenring layer (issue 10)",
	Experiments: []Experiment{
		{
			ID: "groups", Title: "1 sender, one region of 25 nodes, every group on the same 25 members (QSM Figure 1)",
			Stacks: []string{"qsm.stack", "baseline.stack"}, Scenario: "qsm-groups.scenario",
			Param: "groups-per-node=1,1024,8192", QuickParam: "groups-per-node=1,64", // the full 3 s: rate control takes about a second to climb from rate_min
			Measures: []Measure{
				{Metric: "throughput per receiver", Unit: "msgs/s", Field: "throughput_msgs_per_s", Paper: "almost independent of the number of groups (1,024 within 5%, 8,192 within 10%)", Rule: Rule{Kind: Flat, A: 0.10},
					FirstOnly: true}, // the baseline beside it shows what per-group protocols pay
			},
		},
		{
			ID: "recovery", Title: "1% loss, one sender at 2,000 messages/s into one region of 10 to 100 nodes (QSM sections 3.9-3.10): token rounds to recover and to ACK",
			Stacks: []string{"fifo : tokenring(interval=200ms)"}, Scenario: "qsm-recovery.scenario",
			Param: "nodes+group-size=10,25,50,100", QuickParam: "nodes+group-size=10,25", Quick: []string{"duration=2s"},
			Measures: []Measure{
				{Metric: "recovery, token rounds", Field: "layers.tokenring.recovery_rounds_mean", Paper: "about 2.5 rounds whatever the region size", Rule: Rule{Kind: Between, A: 1.5, B: 3.5}},
				{Metric: "regional ACK, token rounds", Field: "layers.tokenring.ack_rounds_mean", Paper: "1 to 3.5 rounds", Rule: Rule{Kind: Between, A: 1, B: 3.5}},
			},
		},
		{
			ID: "partitions", Title: "25-node region under 1% loss: partitions of 5 against one partition of 25",
			Stacks: []string{"qsm.stack"}, Scenario: "qsm-groups.scenario",
			Set: []string{"loss=uniform:1%", "groups-per-node=1"}, Quick: []string{"duration=2s"},
			Param: "tokenring.replicas=25,5",
			Measures: []Measure{
				{Metric: "throughput per receiver", Unit: "msgs/s", Field: "throughput_msgs_per_s", Paper: "partitions of 5 beat one of 25", Rule: Rule{Kind: Rises, A: 0}},
			},
		},
	},
}

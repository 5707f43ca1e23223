package reproduce

// spread is issue 11's "What must hold" as a table; it runs once layers/hop
// and its specs (specs/spread.stack, specs/spread-e2e.stack,
// specs/spread-wan.scenario) exist.
var spread = Paper{
	Name:  "spread",
	Title: "Spread: wide-area group communication (hop-by-hop against end-to-end recovery)",
	Needs: "the hop layer (issue 11)",
	Experiments: []Experiment{
		{
			ID: "wan", Title: "three sites, WAN links of 30-80 ms with 1% loss and a bandwidth limit, one sender at the highest rate (section 4)",
			Stacks: []string{"spread.stack", "spread-e2e.stack"}, Scenario: "spread-wan.scenario", Quick: []string{"duration=3s"},
			Measures: []Measure{
				{Metric: "throughput, hop-by-hop / end-to-end", Unit: "msgs/s", Field: "throughput_msgs_per_s", Paper: "4.7x and 5.3x (issue 11 asks at least 3x)", Rule: Rule{Kind: Ratio, A: 3}},
				{Metric: "owed deliveries made", Field: "deliveries_of_expected / deliveries_expected", Paper: "hop-by-hop delivers everything", Rule: Rule{Kind: AtLeast, A: 1}, FirstOnly: true},
			},
		},
	},
}

package experiment

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/layercast/layercast/event"
)

// Assignment is who is in which group and who sends.
type Assignment struct {
	// Nodes are n1..nN.
	Nodes []event.NodeID
	// Groups maps each group (g1..gG) to its members, sorted.
	Groups map[event.GroupID][]event.NodeID
	// Of maps each node to its groups, sorted.
	Of map[event.NodeID][]event.GroupID
	// Senders are the sending nodes, sorted.
	Senders []event.NodeID
}

// Assign places the scenario's nodes in groups as the Ricochet paper does
// (section 5): G = N*d/s groups, each node in exactly d groups, each group
// with exactly s distinct members, otherwise random from the seed. It also
// picks the senders. The scenario must have passed Check.
func Assign(sc Scenario) (*Assignment, error) {
	if err := sc.Check(); err != nil {
		return nil, err
	}
	n, d, s := sc.Nodes, sc.GroupsPerNode, sc.GroupSize
	rng := rand.New(rand.NewPCG(sc.Seed, 0xa551))
	slots := balanced(n, d, s, rng)
	if slots == nil {
		return nil, fmt.Errorf("scenario: found no assignment of %d nodes to groups of %d, %d each", n, s, d)
	}
	a := &Assignment{Groups: map[event.GroupID][]event.NodeID{}, Of: map[event.NodeID][]event.GroupID{}}
	for i := 1; i <= n; i++ {
		a.Nodes = append(a.Nodes, event.NodeID(i))
	}
	for gi, members := range slots {
		g := event.GroupID(gi + 1)
		ms := make([]event.NodeID, len(members))
		for j, m := range members {
			ms[j] = event.NodeID(m + 1)
		}
		slices.Sort(ms)
		a.Groups[g] = ms
		for _, m := range ms {
			a.Of[m] = append(a.Of[m], g)
		}
	}
	k := sc.Senders
	if k == 0 {
		a.Senders = slices.Clone(a.Nodes)
	} else {
		perm := rng.Perm(n)[:k]
		for _, p := range perm {
			a.Senders = append(a.Senders, event.NodeID(p+1))
		}
		slices.Sort(a.Senders)
	}
	return a, nil
}

// balanced returns G groups of s distinct node indexes in [0,n), each index
// in exactly d groups: a random shuffle of the n*d membership slots cut into
// groups, with duplicates inside a group repaired by random swaps between
// groups. nil if it fails (it does not for valid shapes in practice).
func balanced(n, d, s int, rng *rand.Rand) [][]int {
	G := n * d / s
	if s == n {
		out := make([][]int, G)
		for g := range out {
			out[g] = rng.Perm(n)
		}
		return out
	}
	for attempt := 0; attempt < 50; attempt++ {
		stubs := make([]int, 0, n*d)
		for i := 0; i < n; i++ {
			for j := 0; j < d; j++ {
				stubs = append(stubs, i)
			}
		}
		rng.Shuffle(len(stubs), func(i, j int) { stubs[i], stubs[j] = stubs[j], stubs[i] })
		groups := make([][]int, G)
		for g := range groups {
			groups[g] = stubs[g*s : (g+1)*s : (g+1)*s]
		}
		if repair(groups, rng) {
			return groups
		}
	}
	return nil
}

// repair removes duplicate members by swapping a duplicate x in group A with
// a member y of another group B such that y is not in A and x is not in B.
func repair(groups [][]int, rng *rand.Rand) bool {
	in := func(g []int, x int) bool { return slices.Contains(g, x) }
	for pass := 0; pass < 4*len(groups); pass++ {
		clean := true
		for a := range groups {
			A := groups[a]
			for i := range A {
				if !slices.Contains(A[:i], A[i]) {
					continue
				}
				clean = false
				x := A[i]
				off := rng.IntN(len(groups))
				swapped := false
				for k := 0; k < len(groups) && !swapped; k++ {
					b := (off + k) % len(groups)
					if b == a || in(groups[b], x) {
						continue
					}
					B := groups[b]
					for j, y := range B {
						if !in(A, y) {
							A[i], B[j] = y, x
							swapped = true
							break
						}
					}
				}
			}
		}
		if clean {
			return true
		}
	}
	return false
}

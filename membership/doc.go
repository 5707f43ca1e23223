// Package membership holds the pure computations behind group membership:
// the two-level structure of QSM (groups map onto regions, a region being the
// set of nodes with identical group sets; QSM 2005 section 2.1, QSM 2006
// section 2.1) and Ricochet's per-node neighbourhoods (the disjoint
// intersections of the groups a node belongs to; Ricochet sections 4.1 and
// 4.2.3).
//
// Two ways in:
//
//   - Index is incremental. Join, Leave and Remove change the group tables at
//     a cost proportional to the node's own groups and the regions it moves
//     between; Commit turns everything that changed since the last Commit into
//     new numbered group views and region views; Affected and Neighbourhood
//     then say which nodes must hear about it and what they must see. The
//     membership service (layers/gms) runs on an Index.
//
//   - Static, NeighbourhoodOf and LocalRegions compute the same structures
//     from a fixed set of group views: the static membership source of the
//     simulator calls Static once per run, and a node running gms calls
//     Assemble each time it hears an update.
//
// Nothing here does I/O, reads a clock or keeps goroutines.
package membership

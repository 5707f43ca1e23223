// Package fuzz holds the whole-stack fuzz target and the flood probe: real
// stacks built from spec strings, on the simulator, fed raw packets from a
// member and from a non-member, with view changes, casts and time in
// between. Everything is in its tests.
package fuzz

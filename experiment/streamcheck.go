package experiment

// StreamCheck is the one delivery checker: one receiver's deliveries of one
// sender's casts to one group, by message index (Stamp.Index). The
// collector keeps one per (receiver, sender, group); a UDP worker keeps one
// per (sender, group) for itself, so the two count duplicates and FIFO
// violations the same way.
//
// A message delivered twice, ever, is a duplicate. Order is checked over
// the deliveries since the receiver last (re)joined the group (Restart): a
// delivery below one already made since then is a FIFO violation. A gap
// the stack gave up (fifo's overflow) is no violation: what follows it is
// still in order.
//
// The zero StreamCheck is empty and ready to use.
type StreamCheck struct {
	got bitset // indexes delivered, over the whole run
	hi  uint64 // highest index delivered since the last Restart, plus 1; 0 none
}

// Deliver records the delivery of index. dup says it was delivered before
// (nothing else is recorded then); late says it comes below one delivered
// since the last Restart. A delivery not owed to the receiver (checked
// false: cast before it joined) is recorded but neither checked for order
// nor a reference for what follows.
func (s *StreamCheck) Deliver(index uint64, checked bool) (dup, late bool) {
	if s.got.has(index) {
		return true, false
	}
	s.got.set(index)
	switch {
	case !checked:
	case index+1 < s.hi:
		return false, true
	default:
		s.hi = index + 1
	}
	return false, false
}

// Restart checks order afresh: the receiver (re)joined the group and the
// stack starts its streams anew.
func (s *StreamCheck) Restart() { s.hi = 0 }

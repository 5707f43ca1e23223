package stack

// Feed is a layer's intent to send, pulled when the transport has room (QSM
// 2006, section 3: feeds). Instead of building packets ahead and queueing
// them, a layer makes a Feed once (Context.NewFeed), calls Ready when it has
// something to send, and builds each packet just in time, inside its pull
// function, when the stack asks. Control feeds are asked before data feeds,
// so acks, naks and tokens never queue behind data; feeds of one class take
// turns. The application's send queue is one data feed.
//
// Feeds are asked only between steps, when no event is waiting in the
// stack and the transport says it can take more (Pacer.Writable; always,
// for a transport without a Pacer).
type Feed struct {
	st      *Stack
	pull    func() bool
	control bool
	queued  bool
	next    *Feed
}

// Ready says the feed has something to send: the stack will call its pull
// function when the transport has room. Calling it again before the pull
// does nothing more.
func (f *Feed) Ready() {
	if f.queued || f.st.closed {
		return
	}
	f.queued = true
	q := &f.st.dataFeeds
	if f.control {
		q = &f.st.ctrlFeeds
	}
	q.push(f)
}

// Waiting reports whether the feed is ready and not yet pulled.
func (f *Feed) Waiting() bool { return f.queued }

// feedQueue is a FIFO of ready feeds, linked through the feeds themselves:
// readying a feed allocates nothing.
type feedQueue struct{ head, tail *Feed }

func (q *feedQueue) push(f *Feed) {
	f.next = nil
	if q.tail == nil {
		q.head = f
	} else {
		q.tail.next = f
	}
	q.tail = f
}

func (q *feedQueue) pop() *Feed {
	f := q.head
	if f == nil {
		return nil
	}
	q.head = f.next
	if q.head == nil {
		q.tail = nil
	}
	f.next = nil
	return f
}

// pullFeed asks the first ready feed, control before data, for a packet. It
// reports false if no feed is ready.
func (s *Stack) pullFeed() bool {
	f := s.ctrlFeeds.pop()
	if f == nil {
		f = s.dataFeeds.pop()
	}
	if f == nil {
		return false
	}
	f.queued = false
	if f.pull() {
		f.Ready() // more to send: back in line behind the others of its class
	}
	return true
}

// Package vsync is view-synchronous flush for layercast (issue 15 item 1),
// the guarantee Isis and Ensemble call virtual synchrony, Spread extended
// virtual synchrony and JGroups FLUSH: members that install the same two
// consecutive views of a group delivered the same set of messages in the
// first.
//
// It stands above FIFO reliable delivery and a membership layer:
//
//	vsync : fifo : reliable : gms
//
// Data path: every cast carries the view its sender's application had (its
// tag) and its number in the sender's stream for the group. A cast is
// delivered in the view it was cast in: one tagged with a view not
// installed here yet waits for it. Delivered messages are kept for
// re-sending until stable (members gossip how far they delivered every
// stream) or until the next view, within max_bytes.
//
// A new view from below is held back and flushed:
//
//	view arrives ──> Block up, HoldOff (casts wait in the layer, never dropped)
//	             ──> report: per old-view sender, the highest number delivered
//	every survivor's report ──> cut per sender = the most a survivor delivered
//	             ──> the lowest survivor with the cut re-sends what another lacks
//	             ──> deliver up to the cut; a member whose delivery changed reports again
//	every survivor's latest report says what we delivered, counting the
//	survivors we count (or it installed the view already)
//	             ──> View up, Unblock, the waiting casts go
//
// Survivors are the members of both views that the new view does not list
// as (re)joining. Reports travel as sequenced casts, so a survivor's report
// reaches every member after all its old-view casts (FIFO): a count is a
// cut. After its report a member delivers no more old-view casts until the
// cut is known, so it never delivers past it. A member installs the view
// only once every survivor's latest report equals what it delivered itself:
// a survivor that re-sent what only it had waits for the others to say they
// have it, so if it is removed meanwhile (frozen, partitioned) it never
// installs the view with more than they did; the others then leave out of
// the cut what only removed survivors had.
//
// A member whose old view differs from ours (it missed a view) still
// reports; its report is not part of our cut, since we share no pair of
// consecutive views with it. Views are installed in order, none skipped: a
// view that arrives during a flush waits for it, and a survivor that will
// never report (a newer view removes or readmits it, or it reported for a
// newer target without one for ours) is no longer waited for nor counted
// in the cut; if it was to re-send a sender's messages, the next survivor
// that has them does. The view goes up after the old view's last
// deliveries (the stack hands the application the top layer's events in
// order). flush_timeout bounds a flush whose survivors stop answering
// without being removed: it runs from the flush's last progress (a report
// or an old-view cast arriving), so a survivor still catching up on a
// stream under overload is waited for, not given up on. Members that
// agreed already hear of such a survivor only through its reports: while
// old-view casts still bring it nearer the cut (delivered, or arriving
// ahead of the reports it waits for), it reports again at most once per a
// third of flush_timeout (counter catching_up_reports), so they wait for
// it too; a survivor that stops moving stops reporting. A member readmitted
// into a view the others reach only after flushes of their own (views it
// was out of the group for) hears nothing from them for its next flush
// until they are done: their reports in those older flushes are its
// flush's progress too. A flush given up that way installs the view with
// what the member has, which may differ from what another delivered
// (counted in flush_timeouts): the one way left to break view synchrony.
//
// Whether a survivor is gone is learned from views, which reach members at
// different times. A member that already leaves a removed survivor out of
// its cut must not install the view while another, not yet told, still
// takes that survivor's report and delivers what only it had (they would
// move to the view having delivered different sets). So a report also
// names the survivors its sender no longer counts, and a member installs
// the view only once every survivor it counts has reported the same
// delivery while counting the same survivors, or has installed the view
// already (a report of its from that view or a newer one says so: what it
// delivered is final). Members that count the same survivors compute their
// cut over the same members' reports, so none of them delivers past what
// the others reported: the one told of a removal later waits for the
// others' next reports, and takes what they delivered meanwhile (re-sent
// by whoever has it) into its cut. What this rests on: during a flush a
// member's set of gone survivors only grows, and a member delivers an
// old-view cast only up to a cut taken over the reports of survivors it
// counts; so once every member a member counts has reported the same
// delivery counting the same survivors, none of them can deliver more.
//
// A node readmitted after being removed (a freeze past the failure
// detector's timeout, a partition) keeps, per sender, the highest number it
// delivered; the first cast, stale cast or flush report it then hears from
// that sender says where the sender's stream went on, and the gap is
// reported up as event.Lost with the exact range (the sender's numbering,
// from 1): the application gets everything or is told what it missed.
//
// Block and Unblock go up as events; the application hears them through
// stack.BlockReporter (AppFuncs.OnBlock, cluster's OnBlock): Block before
// the flush, Unblock right after the new view. The layer also sends HoldOff
// and Resume, so an application that only watches flow control
// (stack.Application.Flow) is held off just the same.
package vsync

// Package announce is the daemon's announcer: the one place that decides
// whether applications may trust this machine's clock and tells every
// transport. It runs the stepdown policy (package policy) on the daemon's
// inputs (steps, wake-ups from suspend, readings, probe reports), numbers
// each event with the process's sequence number, carries the clock epoch,
// counts events in clockwatch_stepdown_events_total (with the state and
// epoch gauges), keeps the policy's state across restarts in the same boot
// (StateFile, stepdown.json) and ticks the policy at its deadlines. The
// daemon creates it (internal/daemon) whenever any transport is on; it knows
// nothing of sockets, segments or clusters.
//
// # Transports
//
// A transport tells the world what the announcer decides. Each is on or off
// by itself (the switches are all in one place, internal/daemon's
// announcerWanted); the announcer runs the same with none, one or all of
// them. Every transport attaches the same way: its constructor takes the
// announcer (a Subscribable) and subscribes, and its Run (or Close, when Run will
// not run) closes the Subscription. The Delivery it asks for is the only
// difference:
//
//   - the stepdown socket (internal/transport/socket), InLine: its delivery
//     only queues the message for each client, and the latency from a step
//     to the clients' sockets is the point of it. It keeps the last
//     Update's Snapshot itself, under its own mutex with the broadcast, and
//     greets new clients and beats from it: a hello's seq is the last event
//     sent, every later one reaches the client, and neither a hello nor a
//     heartbeat calls into the announcer;
//   - the bounded-time segment (internal/transport/segment), Buffered: each
//     announcement triggers a rewrite, and the segment's status is judged
//     from Latest (a stepdown for a step, a suspend or a drill is
//     "disrupted");
//   - the Kubernetes Node condition and events (internal/transport/kubernetes),
//     Buffered.
//
// # Adding a transport
//
// A new transport needs nothing here. Its constructor subscribes (so that
// no announcement after the daemon's start is missed); its Run shows Latest
// at once and after each announcement, and closes the subscription when it
// stops:
//
//	sub := ann.Subscribe("k8s", announce.Buffered(16)) // in the constructor
//	defer sub.Close()                                  // in Run
//	publish(sub.Latest())                              // the node condition: the state now
//	for {
//		select {
//		case <-ctx.Done():
//			return nil
//		case an, ok := <-sub.C():
//			if !ok {
//				return nil
//			}
//			record(an)            // one Kubernetes Event per announcement
//			publish(sub.Latest()) // whatever was dropped, the state now
//		}
//	}
//
// The contract: the announcer never waits for a transport, and never runs
// one with its lock held. Each input makes an Update (the announcements it
// caused, numbered, and the state they left; a state or hold-down that
// changed without one is an update too) and hands it to every subscription
// in a turn taken under the announcer's lock and waited for without it: in
// sequence order, without holding up Latest. Delivery to a Buffered
// subscription is a non-blocking send; an announcement that finds the
// buffer full is dropped for that subscription only
// (Subscription.Dropped), and a gap in Announcement.Seq says so. Latest is
// always right, so a transport that only mirrors the state (a condition, a
// segment) is never wrong for long, and a slow one (an API server that
// takes seconds) delays neither the socket nor the segment. An InLine
// delivery runs before the input returns, so it must not block (queue and
// return), must not feed the announcer and must not close its own
// subscription.
//
// The daemon wires a transport in internal/daemon (the transport's
// constructor gets the *Announcer, its task joins the others) and adds its
// switch to the condition that creates the announcer (daemon.go:
// announcerWanted).
//
// The policy's configuration (stepdown.hold_down, stepdown.triggers) is
// policy.Config, the announcer's: the config package reads it beside the
// socket's settings under the stepdown key (config.Stepdown), and SetConfig
// applies a reload; no transport's configuration carries it.
//
// Counted at issue 33 (item 1): the announcer had 18 exported methods, 6
// of them for transports and 3 of those for the socket alone (Attach,
// Current, SentAt; Tick took the socket's heartbeat as a callback), and 3
// ways to attach (Attach in line; Subscribe, then Status called back;
// a Subscription the daemon made handed to Kubernetes' Run). Now it has 14
// and one way (Subscribe with a Delivery, from the transport's
// constructor); what a transport reads is its Subscription's.
//
// # Inputs
//
// The daemon's feed (internal/daemon/feed.go) hands the announcer each step
// event once the journal has made it durable (nothing is announced before
// the epoch is fsync'd), each wake-up from suspend, and each poll of the
// kernel and the time sources. A new trigger reason is a row of the policy's
// trigger table (internal/policy/reasons.go), not a change here.
package announce

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
// by itself; the announcer runs the same with none, one or all of them:
//
//   - the stepdown socket (internal/stepdown/server), in line (Attach): its
//     delivery only queues the message for each client, and the latency
//     from a step to the clients' sockets is the point of it;
//   - the bounded-time segment (internal/clockbound), by Subscription: each
//     announcement triggers a rewrite, and the segment's status is judged
//     from Latest (a stepdown for a step, a suspend or a drill is
//     "disrupted");
//   - the Kubernetes Node condition and events (internal/kubernetes), by
//     Subscription.
//
// # Adding a transport
//
// A new transport needs nothing here. It takes a Subscription in its Run,
// shows Latest at once and after each announcement, and closes the
// subscription when it stops:
//
//	sub := ann.Subscribe("k8s", 16)
//	defer sub.Close()
//	publish(sub.Latest())                // the node condition: the state now
//	for {
//		select {
//		case <-ctx.Done():
//			return nil
//		case an, ok := <-sub.C():
//			if !ok {
//				return nil
//			}
//			record(an)                    // one Kubernetes Event per announcement
//			publish(sub.Latest())         // whatever was dropped, the state now
//		}
//	}
//
// The contract: the announcer never waits for a transport. Delivery to a
// Subscription is a non-blocking send; an announcement that finds the buffer
// full is dropped for that subscription only (Subscription.Dropped), and a
// gap in Announcement.Seq says so. Latest is always right, so a transport
// that only mirrors the state (a condition, a segment) is never wrong for
// long, and a slow one (an API server that takes seconds) delays neither the
// socket nor the segment. Attach is for in-line delivery only: f runs with
// the announcer locked and must neither block nor call back.
//
// The daemon wires a transport in internal/daemon (the transport's
// constructor gets the *Announcer, its task joins the others) and adds its
// switch to the condition that creates the announcer (daemon.go:
// announcerWanted).
//
// # Inputs
//
// The daemon's feed (internal/daemon/feed.go) hands the announcer each step
// event once the journal has made it durable (nothing is announced before
// the epoch is fsync'd), each wake-up from suspend, and each poll of the
// kernel and the time sources. A new trigger reason is a row of the policy's
// trigger table (internal/stepdown/policy/reasons.go), not a change here.
package announce

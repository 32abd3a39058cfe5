// Package loop is the polling loop every source poller runs: poll now, then
// again after the wait the poller asks for (its poll interval, or longer
// while the source it looks for is absent), until the context ends; and
// what each poller keeps of its polls (Tally, in the snapshot it publishes
// through a Latest), and the reading a tally starts (Tally.Reading).
package loop

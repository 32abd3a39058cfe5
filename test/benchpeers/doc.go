// Command benchpeers measures clockwatch side by side with its peers on one
// machine: node_exporter with its timex and time collectors and, when a
// binary is given, SuperQ's chrony_exporter. All of them read the same
// chronyd (started here with -x, so it never touches the clock, and
// synchronised to N NTP servers on loopback). It measures, interleaved in
// one run so that the machine's load hits every exporter alike:
//
//   - idle CPU over a window (all exporters idle at once), and RSS at its
//     start and end;
//   - server CPU per scrape (keep-alive, in blocks that alternate between the
//     exporters), and chronyd's CPU during each exporter's blocks;
//   - scrape latency p50 and p99, and bytes per scrape (plain text);
//   - two concurrent scrapers against one running sequentially, and how
//     many scrapes were refused;
//
// and prints each figure with its ratio to node_exporter's, and the load
// averages at the start and the end. scripts/bench-peers.sh builds the
// binaries and runs it (make bench-peers).
package main

// Package proxy is a TCP proxy the replay puts on the links it must be able
// to stall or cut: a replica's replication link to the master, a Sentinel's
// link to it. Freeze holds bytes with the connections open (a link that
// stalls), Cut drops held bytes and closes every connection (a link that
// breaks, or a master that died before it sent them).
package proxy

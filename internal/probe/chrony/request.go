package chrony

import (
	fbchrony "github.com/facebook/time/ntp/chrony"
)

// Requests are built here rather than with the library's constructors: the
// library's request types carry their zero padding as byte arrays that
// encoding/binary writes one reflected byte at a time, a quarter of a poll's
// CPU. These types hold only the meaningful fields; checkedConn pads each
// request to the length chronyd requires (candm.h: a request is at least as
// long as its reply) before sending it.

// Command numbers (candm.h).
const (
	cmdNSources   = 14
	cmdSourceData = 15
	cmdTracking   = 33
	cmdSourceStat = 34
	cmdSourceName = 65
)

// requestLen is the length chronyd expects for each command, as the
// library's request types have it.
func requestLen(cmd uint16) int {
	switch cmd {
	case cmdSourceData, cmdSourceStat:
		return 420
	case cmdSourceName:
		return 424
	}
	return 416
}

// protocolVersion is chrony's command protocol version (6, chrony ≥ 2.2).
const protocolVersion = 6

func head(cmd uint16) fbchrony.RequestHead {
	return fbchrony.RequestHead{Version: protocolVersion, PKTType: 1, Command: fbchrony.CommandType(cmd)}
}

type plainRequest struct{ fbchrony.RequestHead }

type indexRequest struct {
	fbchrony.RequestHead
	Index int32
	EOR   int32
}

type addrRequest struct {
	fbchrony.RequestHead
	IPAddr fbchrony.IPAddr
	EOR    int32
}

func trackingRequest() *plainRequest { return &plainRequest{head(cmdTracking)} }
func sourcesRequest() *plainRequest  { return &plainRequest{head(cmdNSources)} }
func sourceDataRequest(i int) *indexRequest {
	return &indexRequest{RequestHead: head(cmdSourceData), Index: int32(i)}
}
func sourceStatsRequest(i int) *indexRequest {
	return &indexRequest{RequestHead: head(cmdSourceStat), Index: int32(i)}
}
func sourceNameRequest(ip *fbchrony.IPAddr) *addrRequest {
	return &addrRequest{RequestHead: head(cmdSourceName), IPAddr: *ip}
}

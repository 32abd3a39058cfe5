package ptp

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/facebook/time/ptp/protocol"
)

// get sends a GET for one management ID and decodes the single reply.
func get[T protocol.ManagementTLV](ctx context.Context, c *Client, id protocol.ManagementID, name string) (T, error) {
	var out T
	_, err := c.exchange(ctx, id, name, 1, func(b []byte) error {
		var err error
		out, err = decode[T](b)
		return err
	})
	return out, err
}

func decode[T protocol.ManagementTLV](b []byte) (T, error) {
	var zero T
	p, err := protocol.DecodePacket(b)
	if err != nil {
		return zero, err
	}
	m, ok := p.(*protocol.Management)
	if !ok {
		return zero, fmt.Errorf("got a %T, not a management message", p)
	}
	tlv, ok := m.TLV.(T)
	if !ok {
		return zero, fmt.Errorf("got a %T, want %T", m.TLV, zero)
	}
	return tlv, nil
}

// Offsets in a management message (IEEE 1588-2019 tables 35, 56, 58, 109).
const (
	offSequence = 30 // header sequenceId
	offAction   = 46 // actionField (low nibble)
	offTLVType  = 48
	offTLVLen   = 50
	offMgmtID   = 52 // managementId, or managementErrorId in an error TLV
	offData     = 54 // dataField, or managementId in an error TLV
	tlvError    = 0x0002
)

// exchange sends one GET and reads n replies with its sequence number,
// handing each to each (when not nil); it returns the last reply's bytes.
// Replies to earlier requests (a previous poll that timed out) are skipped.
func (c *Client) exchange(ctx context.Context, id protocol.ManagementID, name string, n int, each func([]byte) error) ([]byte, error) {
	deadline := time.Now().Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("setting a deadline on the socket to ptp4l: %w", err)
	}
	c.seq++
	req, err := request(id, c.seq, c.domain, c.pid)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s request: %w", name, err)
	}
	if _, err := c.conn.Write(req); err != nil {
		return nil, c.explain(name, err)
	}
	var last []byte
	for got, skipped := 0, 0; got < n; {
		m, err := c.conn.Read(c.buf[:])
		if err != nil {
			return nil, c.explain(name, err)
		}
		b := c.buf[:m]
		if m < offData || b[0]&0x0f != byte(protocol.MessageManagement) {
			return nil, fmt.Errorf("ptp4l at %s answered %s with %d bytes that are not a management message", c.path, name, m)
		}
		if binary.BigEndian.Uint16(b[offSequence:]) != c.seq || b[offAction]&0x0f != byte(protocol.RESPONSE) {
			if skipped++; skipped == 16 {
				return nil, fmt.Errorf("ptp4l at %s: 16 replies in a row that do not answer the %s request", c.path, name)
			}
			continue
		}
		got++
		if tlv := binary.BigEndian.Uint16(b[offTLVType:]); tlv == tlvError {
			e := protocol.ManagementErrorID(binary.BigEndian.Uint16(b[offMgmtID:]))
			return nil, fmt.Errorf("ptp4l at %s refused %s: %s", c.path, name, e)
		} else if tlv != uint16(protocol.TLVManagement) {
			return nil, fmt.Errorf("ptp4l at %s answered %s with TLV type %#04x", c.path, name, tlv)
		}
		if got := protocol.ManagementID(binary.BigEndian.Uint16(b[offMgmtID:])); got != id {
			return nil, fmt.Errorf("ptp4l at %s answered %s with management ID %#04x", c.path, name, uint16(got))
		}
		if each != nil {
			if err := each(b); err != nil {
				return nil, fmt.Errorf("decoding ptp4l's %s: %w", name, err)
			}
		}
		last = b
	}
	return last, nil
}

// request encodes a GET of id with an empty data field, as pmc sends it.
func request(id protocol.ManagementID, seq uint16, domain uint8, pid uint16) ([]byte, error) {
	m := &protocol.Management{
		ManagementMsgHead: protocol.ManagementMsgHead{
			Header: protocol.Header{
				SdoIDAndMsgType:    protocol.NewSdoIDAndMsgType(protocol.MessageManagement, 0),
				Version:            protocol.Version,
				MessageLength:      uint16(binary.Size(protocol.ManagementMsgHead{}) + binary.Size(protocol.TLVHead{}) + 2),
				DomainNumber:       domain,
				SequenceID:         seq,
				SourcePortIdentity: protocol.PortIdentity{PortNumber: pid},
				LogMessageInterval: protocol.MgmtLogMessageInterval,
			},
			TargetPortIdentity: protocol.DefaultTargetPortIdentity,
			ActionField:        protocol.GET,
		},
		TLV: &protocol.ManagementTLVHead{
			TLVHead:      protocol.TLVHead{TLVType: protocol.TLVManagement, LengthField: 2},
			ManagementID: id,
		},
	}
	return m.MarshalBinary()
}

// decodeTimeProperties reads a TIME_PROPERTIES_DATA_SET reply (IEEE
// 1588-2019 15.5.3.6.1): currentUtcOffset, the flags octet, timeSource.
func decodeTimeProperties(b []byte) (TimeProperties, error) {
	if int(binary.BigEndian.Uint16(b[offTLVLen:])) < 2+4 || len(b) < offData+4 {
		return TimeProperties{}, fmt.Errorf("%d bytes, too short", len(b))
	}
	f := b[offData+2]
	return TimeProperties{
		CurrentUTCOffset:   int(int16(binary.BigEndian.Uint16(b[offData:]))),
		Leap61:             f&0x01 != 0,
		Leap59:             f&0x02 != 0,
		UTCOffsetValid:     f&0x04 != 0,
		PTPTimescale:       f&0x08 != 0,
		TimeTraceable:      f&0x10 != 0,
		FrequencyTraceable: f&0x20 != 0,
		TimeSource:         b[offData+3],
	}, nil
}

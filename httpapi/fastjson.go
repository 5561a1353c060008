package httpapi

import (
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// The reservation route's hot path decodes and encodes its usual shapes by
// hand: no reflection, no intermediate maps. The strict decoder stays the
// authority: fastReserve accepts only bodies decodeReserve accepts, with the
// same result (FuzzDecodeReserve checks it), and leaves everything unusual
// to decodeReserve, which names what is wrong. The answer, a wire.Hold, is
// written by its own hand encoder (wire.Hold.AppendJSON).

// scanner reads JSON tokens from b.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips whitespace and consumes c.
func (s *scanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string without escapes or control characters.
func (s *scanner) str() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// uint reads a positive integer of at most 18 digits without a leading zero,
// within [lo, hi].
func (s *scanner) uint(lo, hi int64) (int64, bool) {
	s.ws()
	start := s.i
	var v int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		v = v*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	n := s.i - start
	if n == 0 || n > 18 || s.b[start] == '0' || v < lo || v > hi {
		return 0, false
	}
	return v, true
}

// fastReserve decodes a reservation body of the usual shape; see above.
func fastReserve(shop int64, body []byte, lim limits) (holdfast.ReserveParams, bool) {
	p := holdfast.ReserveParams{ShopID: shop}
	s := &scanner{b: body}
	if !s.next('{') {
		return p, false
	}
	var haveID, haveLines, haveTTL bool
	for {
		name, ok := s.str()
		if !ok || !s.next(':') {
			return p, false
		}
		switch string(name) {
		case "checkout_id":
			v, ok := s.str()
			if !ok || haveID || len(v) != 36 {
				return p, false
			}
			id, err := uuid.ParseBytes(v)
			if err != nil || id == uuid.Nil {
				return p, false
			}
			p.CheckoutID, haveID = id, true
		case "lines":
			if haveLines || !s.lines(&p, lim) {
				return p, false
			}
			haveLines = true
		case "ttl_seconds":
			v, ok := s.uint(int64(holdfast.HoldTTLMin/time.Second), int64(lim.HoldLifetimeMax/time.Second))
			if !ok || haveTTL {
				return p, false
			}
			p.TTL, haveTTL = time.Duration(v)*time.Second, true
		default:
			return p, false
		}
		if s.next('}') {
			break
		}
		if !s.next(',') {
			return p, false
		}
	}
	s.ws()
	return p, haveID && haveLines && s.i == len(s.b)
}

func (s *scanner) lines(p *holdfast.ReserveParams, lim limits) bool {
	if !s.next('[') {
		return false
	}
	p.Lines = make([]holdfast.Line, 0, 1)
	for {
		if len(p.Lines) == lim.LinesPerCartMax || !s.next('{') {
			return false
		}
		var l holdfast.Line
		var have [3]bool
		for {
			name, ok := s.str()
			if !ok || !s.next(':') {
				return false
			}
			var v int64
			switch string(name) {
			case "item_id":
				v, ok = s.uint(1, 1<<62)
				l.ItemID = v
				ok = ok && !have[0]
				have[0] = true
			case "location_id":
				v, ok = s.uint(1, 1<<62)
				l.LocationID = v
				ok = ok && !have[1]
				have[1] = true
			case "quantity":
				v, ok = s.uint(1, int64(lim.QuantityMax))
				l.Quantity = int(v)
				ok = ok && !have[2]
				have[2] = true
			default:
				return false
			}
			if !ok {
				return false
			}
			if s.next('}') {
				break
			}
			if !s.next(',') {
				return false
			}
		}
		if !have[0] || !have[1] || !have[2] {
			return false
		}
		for _, o := range p.Lines {
			if o.ItemID == l.ItemID && o.LocationID == l.LocationID {
				return false
			}
		}
		p.Lines = append(p.Lines, l)
		if s.next(']') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

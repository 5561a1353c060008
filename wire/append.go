package wire

import (
	"strconv"
	"time"

	"github.com/google/uuid"
)

// The reservation route's hot path writes its answer, a Hold, without
// reflection. TestAppendJSON and TestAppendJSONRevisionReleased hold it to
// encoding/json byte for byte: a member added to Hold is added here too.

// AppendJSON appends h's JSON, byte for byte what encoding/json writes
// for it (with SetEscapeHTML(false) and the trailing newline).
func (h *Hold) AppendJSON(b []byte) []byte {
	b = append(b, `{"checkout_id":"`...)
	b = appendUUID(b, h.CheckoutID)
	b = append(b, `","shop_id":`...)
	b = strconv.AppendInt(b, h.ShopID, 10)
	b = append(b, `,"status":`...)
	b = strconv.AppendQuote(b, h.Status)
	b = append(b, `,"lines":[`...)
	for i, l := range h.Lines {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLine(b, l)
	}
	b = append(b, `],"created_at":`...)
	b = appendTime(b, h.CreatedAt.Time)
	b = append(b, `,"expires_at":`...)
	b = appendTime(b, h.ExpiresAt.Time)
	b = append(b, `,"deadline":`...)
	b = appendTime(b, h.Deadline.Time)
	if h.EndedAt != nil {
		b = append(b, `,"ended_at":`...)
		b = appendTime(b, h.EndedAt.Time)
	}
	if h.Claimable {
		b = append(b, `,"claimable":true`...)
	}
	if h.Revision != 0 {
		b = append(b, `,"revision":`...)
		b = strconv.AppendInt(b, h.Revision, 10)
	}
	if len(h.Released) > 0 {
		b = append(b, `,"released":`...)
		b = appendLines(b, h.Released)
	}
	if h.MergedInto != nil {
		b = append(b, `,"merged_into":"`...)
		b = appendUUID(b, *h.MergedInto)
		b = append(b, '"')
	}
	return append(b, "}\n"...)
}

func appendUUID(b []byte, id uuid.UUID) []byte {
	const hexDigits = "0123456789abcdef"
	for i, x := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexDigits[x>>4], hexDigits[x&0xf])
	}
	return b
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeFormat)
	return append(b, '"')
}

// TimeFormat is the layout of every time on the wire: RFC 3339 in UTC with
// exactly six fractional digits — microseconds, both databases' precision
// — so a time never drops its trailing zeros (…12:00:00.000000Z, as the
// docs show them).
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// Time is a time on the wire, written in TimeFormat; it reads any RFC 3339
// time (the embedded time.Time's UnmarshalJSON).
type Time struct{ time.Time }

// MarshalJSON writes t in TimeFormat.
func (t Time) MarshalJSON() ([]byte, error) { return appendTime(nil, t.Time), nil }

// appendLine appends one line, as encoding/json writes it.
func appendLine(b []byte, l Line) []byte {
	b = append(b, `{"item_id":`...)
	b = strconv.AppendInt(b, l.ItemID, 10)
	b = append(b, `,"location_id":`...)
	b = strconv.AppendInt(b, l.LocationID, 10)
	b = append(b, `,"quantity":`...)
	b = strconv.AppendInt(b, int64(l.Quantity), 10)
	if l.Preordered != 0 {
		b = append(b, `,"preordered":`...)
		b = strconv.AppendInt(b, int64(l.Preordered), 10)
	}
	if l.ExpectedAt != nil {
		b = append(b, `,"expected_at":`...)
		b = appendTime(b, l.ExpectedAt.Time)
	}
	return append(b, '}')
}

// appendLines appends lines as a JSON array, as encoding/json writes it.
func appendLines(b []byte, lines []Line) []byte {
	b = append(b, '[')
	for i, l := range lines {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLine(b, l)
	}
	return append(b, ']')
}

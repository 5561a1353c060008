package failovertest

import (
	"strings"
	"testing"
	"time"
)

// TestCheckRejectsBadHistories: the failover checker accepts a good
// history with unknown outcomes and 503s in the gap, and rejects each kind
// of lie a failover could tell: an acknowledged hold, claim, release or
// stock change lost, a false not_found, a false sold out, a 500 that is
// not outcome_unknown; and of the waitlist: an acknowledged wait lost or
// answered not_found, a grant taken back, an ended wait granted or
// waiting again or ending for another reason.
func TestCheckRejectsBadHistories(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	good := []Event{
		{Op: OpReserve, Checkout: "a", Item: 1, Qty: 1, At: at(1), Status: 201, Hold: "held"},
		{Op: OpReserve, Checkout: "b", Item: 2, Qty: 1, At: at(2), Status: 500, Code: "outcome_unknown"},
		{Op: OpReserve, Checkout: "b", Item: 2, Qty: 1, At: at(3), Status: 503, Code: "unavailable"},
		{Op: OpReserve, Checkout: "b", Item: 2, Qty: 1, At: at(4), Status: 200, Hold: "held"},
		{Op: OpClaim, Checkout: "a", Item: 1, At: at(5), Status: 0},
		{Op: OpClaim, Checkout: "a", Item: 1, At: at(6), Status: 200, Hold: "claimed"},
		{Op: OpRelease, Checkout: "b", Item: 2, At: at(7), Status: 200, Hold: "released"},
		{Op: OpAdjust, Checkout: "k1", Item: 2, Qty: 3, At: at(8), Status: 503},
		{Op: OpAdjust, Checkout: "k1", Item: 2, Qty: 3, At: at(9), Status: 200},
		{Op: OpReserve, Checkout: "c", Item: 1, Qty: 1, At: at(9), Status: 409, Code: "insufficient_stock"},
		// the waitlist on item 3 (2 units): h holds both, w1..w4 wait
		{Op: OpReserve, Checkout: "h", Item: 3, Qty: 2, At: at(9), Status: 201, Hold: "held"},
		{Op: OpReserve, Checkout: "w1", Item: 3, Qty: 1, At: at(9), Status: 0},
		{Op: OpReserve, Checkout: "w1", Item: 3, Qty: 1, At: at(10), Status: 202, Hold: "waiting"},
		{Op: OpReserve, Checkout: "w2", Item: 3, Qty: 1, At: at(10), Status: 202, Hold: "waiting"},
		{Op: OpReserve, Checkout: "w3", Item: 3, Qty: 1, At: at(10), Status: 202, Hold: "waiting"},
		{Op: OpReserve, Checkout: "w4", Item: 3, Qty: 1, At: at(10), Status: 202, Hold: "waiting"},
		{Op: OpReserve, Checkout: "w5", Item: 3, Qty: 1, At: at(10), Status: 409, Code: "insufficient_stock"},
		{Op: OpRelease, Checkout: "w2", Item: 3, At: at(11), Status: 410, Code: "wait_cancelled"},
		{Op: OpGet, Checkout: "w1", Item: 3, Qty: 1, At: at(11), Status: 503, Code: "unavailable"},
		{Op: OpRelease, Checkout: "h", Item: 3, At: at(11), Status: 200, Hold: "released"},
		{Op: OpGet, Checkout: "w1", Item: 3, Qty: 1, At: at(12), Status: 202, Hold: "waiting"},
		{Op: OpGet, Checkout: "w3", Item: 3, Qty: 1, At: at(12), Status: 500, Code: "outcome_unknown"},
		{Op: OpGet, Checkout: "w2", Item: 3, Qty: 1, At: at(12), Status: 410, Code: "wait_cancelled"},
		{Op: OpGet, Checkout: "w4", Item: 3, Qty: 1, At: at(12), Status: 410, Code: "wait_expired"},
		{Op: OpGet, Checkout: "w1", Item: 3, Qty: 1, At: at(13), Status: 200, Hold: "held"},
		{Op: OpClaim, Checkout: "w1", Item: 3, At: at(14), Status: 200, Hold: "claimed"},
	}
	final := func() Final {
		return Final{
			Holds: map[string]string{"a": "claimed", "b": "released", "c": "",
				"h": "released", "w1": "claimed", "w2": "wait_cancelled", "w3": "waiting", "w4": "wait_expired", "w5": ""},
			Available: map[int64]int{1: 9, 2: 13, 3: 1},
			Initial:   map[int64]int{1: 10, 2: 10, 3: 2},
			Short:     map[int64]bool{1: true, 3: true},
		}
	}
	if bad := Check(good, final()); len(bad) > 0 {
		t.Fatalf("a good history rejected: %v", bad)
	}
	cases := []struct {
		name   string
		events func([]Event) []Event
		final  func(*Final)
		want   string
	}{
		{"acknowledged hold lost", nil, func(f *Final) { f.Holds["b"] = "" }, "acknowledged hold lost"},
		{"acknowledged claim lost", nil, func(f *Final) { f.Holds["a"] = "held"; f.Available[1] = 10 }, "acknowledged claim lost"},
		{"acknowledged release lost", nil, func(f *Final) { f.Holds["b"] = "held" }, "acknowledged release lost"},
		{"stock change lost", nil, func(f *Final) { f.Available[2] = 10 }, "item 2: available 10, want 13"},
		{"false not found", func(e []Event) []Event {
			return append(e, Event{Op: OpGet, Checkout: "a", Item: 1, At: at(10), Status: 404, Code: "not_found"})
		}, nil, "false not found"},
		{"false sold out", func(e []Event) []Event {
			return append(e, Event{Op: OpReserve, Checkout: "d", Item: 2, Qty: 1, At: at(10), Status: 409, Code: "insufficient_stock"})
		}, nil, "false sold out"},
		{"500 not outcome_unknown", func(e []Event) []Event {
			return append(e, Event{Op: OpReserve, Checkout: "e", Item: 2, Qty: 1, At: at(10), Status: 500, Code: "internal"})
		}, nil, "neither 503 nor outcome_unknown"},
		{"acknowledged wait answered not_found", func(e []Event) []Event {
			return append(e, Event{Op: OpGet, Checkout: "w3", Item: 3, Qty: 1, At: at(15), Status: 404, Code: "not_found"})
		}, nil, "not_found for a wait acknowledged"},
		{"acknowledged wait gone after the run", nil, func(f *Final) { f.Holds["w3"] = "" }, "acknowledged wait lost"},
		{"granted wait answered wait_expired", func(e []Event) []Event {
			return append(e, Event{Op: OpGet, Checkout: "w1", Item: 3, Qty: 1, At: at(15), Status: 410, Code: "wait_expired"})
		}, nil, "acknowledged grant lost"},
		{"granted wait answered checkout_waiting", func(e []Event) []Event {
			return append(e, Event{Op: OpClaim, Checkout: "w1", Item: 3, At: at(15), Status: 409, Code: "checkout_waiting"})
		}, nil, "acknowledged grant lost"},
		{"granted hold lost after the run", nil, func(f *Final) { f.Holds["w1"] = "waiting"; f.Available[3] = 2 }, "acknowledged hold lost"},
		{"expired wait later held", func(e []Event) []Event {
			return append(e, Event{Op: OpGet, Checkout: "w4", Item: 3, Qty: 1, At: at(15), Status: 200, Hold: "held"})
		}, nil, "an ended wait granted"},
		{"cancelled wait later waiting", func(e []Event) []Event {
			return append(e, Event{Op: OpGet, Checkout: "w2", Item: 3, Qty: 1, At: at(15), Status: 202, Hold: "waiting"})
		}, nil, "after its wait ended with wait_cancelled"},
		{"ended wait changed its reason", nil, func(f *Final) { f.Holds["w2"] = "wait_expired" }, "an ended wait changed"},
		{"claim and release both acknowledged", func(e []Event) []Event {
			return append(e, Event{Op: OpRelease, Checkout: "a", Item: 1, At: at(10), Status: 200})
		}, nil, "both its claim and its release"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := append([]Event(nil), good...)
			if c.events != nil {
				ev = c.events(ev)
			}
			f := final()
			if c.final != nil {
				c.final(&f)
			}
			bad := Check(ev, f)
			if !strings.Contains(strings.Join(bad, "\n"), c.want) {
				t.Fatalf("want a violation %q, got %q", c.want, bad)
			}
		})
	}
}

// TestGap: the unavailability window is the longest stretch with no
// acknowledgement after the fault, measured from the fault.
func TestGap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ts := []time.Time{t0.Add(-time.Second), t0.Add(500 * time.Millisecond), t0.Add(3 * time.Second), t0.Add(3100 * time.Millisecond)}
	if g := gap(ts, t0); g != 2500*time.Millisecond {
		t.Fatalf("gap %v, want 2.5s", g)
	}
}

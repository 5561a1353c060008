package failovertest

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Op is one kind of request the runner sends.
type Op string

const (
	OpReserve Op = "reserve"
	OpClaim   Op = "claim"
	OpRelease Op = "release"
	OpGet     Op = "get"
	OpAdjust  Op = "adjust"
)

// Event is one answer the service gave: what was asked, when, and what came
// back. Status 0 is a transport error (no answer).
type Event struct {
	Op       Op
	Checkout string // reserve/claim/release/get: the checkout id; adjust: the idempotency key
	Item     int64
	Qty      int // reserve: quantity; adjust: delta
	At       time.Time
	Status   int
	Code     string // the error code, when not 2xx
	Hold     string // the hold's status in a 2xx answer
}

// definite reports whether e says what happened: a 2xx, or a documented
// refusal. 503, outcome_unknown (500) and transport errors do not.
func (e Event) definite() bool {
	switch {
	case e.Status == 0, e.Status == http.StatusServiceUnavailable, e.Code == "outcome_unknown", e.Status == http.StatusGatewayTimeout:
		return false
	}
	return true
}

// History is every answer of a run, in the order they came. It is safe for
// concurrent use.
type History struct {
	mu     sync.Mutex
	events []Event
}

// Add records e.
func (h *History) Add(e Event) {
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

// Events is a copy of the events so far.
func (h *History) Events() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.events...)
}

// Final is the service's answer, after the run, for one checkout (GET) and
// for one key's stock: what Check compares the history with.
type Final struct {
	Holds     map[string]string // checkout -> hold status ("held", "claimed", "released", "expired"), "" when 404
	Available map[int64]int     // item -> available
	Initial   map[int64]int     // item -> available when the run began
	// Short names the items whose stock a reservation may legitimately
	// find short (the hot item, when it can sell out); on every other
	// item insufficient_stock is a false "sold out".
	Short map[int64]bool
}

// Check returns every violation of the failover contract in events given
// the final state:
//   - no answer is a 5xx other than 503 and 500 outcome_unknown;
//   - no acknowledged hold is lost: a checkout whose reserve answered 2xx is
//     not 404, and no claim, release or GET of it answered not_found;
//   - no acknowledged claim or release is lost: the final status matches;
//   - no false sold out: insufficient_stock only on Short items;
//   - no acknowledged stock change or claim lost: each item's available is
//     its initial value plus the acknowledged adjustments minus the claimed
//     quantities (every operation was resolved before Check);
//   - no definite answer contradicts another (a checkout claimed and
//     released, both acknowledged);
//   - no acknowledged wait is lost (the waitlist: a reservation answered
//     202 waiting): it is still waiting, or was granted (then its hold
//     obeys the rules of a hold: not lost, claimable), or its wait ended
//     with a stated reason (410 wait_expired, wait_cancelled,
//     wait_unservable) — never not_found, and never one of these after
//     another: a grant is not taken back (waiting, checkout_waiting or
//     wait_* after held), an ended wait is not granted nor waiting again,
//     and it ends for one reason only, which the final read repeats.
func Check(events []Event, f Final) []string {
	var bad []string
	type co = checkout
	cos := map[string]*co{}
	get := func(e Event) *co {
		c := cos[e.Checkout]
		if c == nil {
			c = &co{item: e.Item}
			cos[e.Checkout] = c
		}
		return c
	}
	adjusted := map[int64]int{}
	adjKeys := map[string]bool{}
	for _, e := range events {
		if e.Status >= 500 && e.Status != http.StatusServiceUnavailable && !(e.Status == 500 && e.Code == "outcome_unknown") {
			bad = append(bad, fmt.Sprintf("%s %s at %s: %d %s (a 5xx that is neither 503 nor outcome_unknown)", e.Op, e.Checkout, e.At.Format("15:04:05.000"), e.Status, e.Code))
		}
		switch e.Op {
		case OpReserve, OpClaim, OpRelease, OpGet:
			bad = append(bad, checkWait(e, get(e))...)
		}
		switch e.Op {
		case OpReserve:
			c := get(e)
			if e.Qty > 0 {
				c.qty = e.Qty
			}
			if e.Status/100 == 2 && e.Hold != "waiting" {
				if !c.reserved {
					c.reserveAt = e.At
				}
				c.reserved = true
			}
			if e.Code == "insufficient_stock" && !f.Short[e.Item] {
				bad = append(bad, fmt.Sprintf("reserve %s at %s: insufficient_stock on item %d, which never runs short (a false sold out)", e.Checkout, e.At.Format("15:04:05.000"), e.Item))
			}
		case OpClaim, OpRelease, OpGet:
			c := get(e)
			if e.Code == "not_found" && c.reserved && e.At.After(c.reserveAt) {
				bad = append(bad, fmt.Sprintf("%s %s at %s: not_found for a hold acknowledged at %s (a false not found)", e.Op, e.Checkout, e.At.Format("15:04:05.000"), c.reserveAt.Format("15:04:05.000")))
			} else if e.Code == "not_found" && c.waited && e.At.After(c.waitAt) {
				bad = append(bad, fmt.Sprintf("%s %s at %s: not_found for a wait acknowledged at %s (a false not found: acknowledged wait lost)", e.Op, e.Checkout, e.At.Format("15:04:05.000"), c.waitAt.Format("15:04:05.000")))
			}
			if e.Op == OpGet && e.Status == http.StatusOK && e.Hold == "held" && !c.reserved {
				c.reserved, c.reserveAt = true, e.At // a wait's grant, read
			}
			if e.Op == OpClaim && e.Status == http.StatusOK {
				c.claimed = true
			}
			if e.Op == OpRelease && e.Status == http.StatusOK {
				c.relsd = true
			}
		case OpAdjust:
			if e.Status == http.StatusOK && !adjKeys[e.Checkout] {
				adjKeys[e.Checkout] = true
				adjusted[e.Item] += e.Qty
			}
		}
	}
	claimedQty := map[int64]int{}
	ids := make([]string, 0, len(cos))
	for id := range cos {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := cos[id]
		if c.claimed && c.relsd {
			bad = append(bad, fmt.Sprintf("checkout %s: both its claim and its release were acknowledged", id))
		}
		final, ok := f.Holds[id]
		if final == "claimed" {
			claimedQty[c.item] += c.qty
		}
		if !c.reserved && c.waited {
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("checkout %s: wait acknowledged, final state not read", id))
			case final == "":
				bad = append(bad, fmt.Sprintf("checkout %s: wait acknowledged at %s, not found after the run (acknowledged wait lost)", id, c.waitAt.Format("15:04:05.000")))
			case c.ended != "" && final != c.ended:
				bad = append(bad, fmt.Sprintf("checkout %s: its wait ended with %s, final state %s (an ended wait changed)", id, c.ended, final))
			}
			continue
		}
		if !c.reserved {
			continue
		}
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("checkout %s: acknowledged, final state not read", id))
		case final == "waiting", strings.HasPrefix(final, "wait_"):
			bad = append(bad, fmt.Sprintf("checkout %s: hold acknowledged at %s, final state %s (acknowledged hold lost)", id, c.reserveAt.Format("15:04:05.000"), final))
		case final == "":
			bad = append(bad, fmt.Sprintf("checkout %s: acknowledged at %s, gone after the run (acknowledged hold lost)", id, c.reserveAt.Format("15:04:05.000")))
		case c.claimed && final != "claimed":
			bad = append(bad, fmt.Sprintf("checkout %s: claim acknowledged, final status %s (acknowledged claim lost)", id, final))
		case c.relsd && final != "released":
			bad = append(bad, fmt.Sprintf("checkout %s: release acknowledged, final status %s (acknowledged release lost)", id, final))
		}
	}
	items := make([]int64, 0, len(f.Initial))
	for it := range f.Initial {
		items = append(items, it)
	}
	sort.Slice(items, func(i, j int) bool { return items[i] < items[j] })
	for _, it := range items {
		want := f.Initial[it] + adjusted[it] - claimedQty[it]
		if got, ok := f.Available[it]; !ok || got != want {
			bad = append(bad, fmt.Sprintf("item %d: available %d, want %d (initial %d + acknowledged adjustments %d - claimed %d): an acknowledged stock change or claim was lost, or one not acknowledged was kept", it, got, want, f.Initial[it], adjusted[it], claimedQty[it]))
		}
	}
	return bad
}

// checkout is what Check knows of one checkout so far.
type checkout struct {
	item                     int64
	qty                      int
	reserved, claimed, relsd bool
	reserveAt                time.Time
	waited                   bool // an answer said it waits (202 waiting)
	waitAt                   time.Time
	ended                    string // the 410 wait_* its wait ended with
}

// checkWait checks e against what earlier answers said of c's wait, and
// records what e says of it: a grant is not taken back, an ended wait is
// not granted nor waiting again, and ends for one reason.
func checkWait(e Event, c *checkout) []string {
	var bad []string
	at := e.At.Format("15:04:05.000")
	waiting := (e.Status == http.StatusAccepted && e.Hold == "waiting") || e.Code == "checkout_waiting"
	ended := e.Status == http.StatusGone && strings.HasPrefix(e.Code, "wait_")
	held := (e.Status/100 == 2 && e.Hold == "held") || (e.Op == OpClaim && e.Status == http.StatusOK)
	what := e.Code
	if what == "" {
		what = e.Hold
	}
	switch {
	case waiting:
		if c.reserved {
			bad = append(bad, fmt.Sprintf("%s %s at %s: %s after its hold was acknowledged at %s (acknowledged grant lost)", e.Op, e.Checkout, at, what, c.reserveAt.Format("15:04:05.000")))
		}
		if c.ended != "" {
			bad = append(bad, fmt.Sprintf("%s %s at %s: %s after its wait ended with %s", e.Op, e.Checkout, at, what, c.ended))
		}
		if e.Status == http.StatusAccepted && !c.waited {
			c.waited, c.waitAt = true, e.At
		}
	case ended:
		if c.reserved {
			bad = append(bad, fmt.Sprintf("%s %s at %s: %s after its hold was acknowledged at %s (acknowledged grant lost)", e.Op, e.Checkout, at, e.Code, c.reserveAt.Format("15:04:05.000")))
		}
		if c.ended != "" && c.ended != e.Code {
			bad = append(bad, fmt.Sprintf("%s %s at %s: %s after its wait ended with %s", e.Op, e.Checkout, at, e.Code, c.ended))
		}
		if c.ended == "" {
			c.ended = e.Code
		}
	case held:
		if c.ended != "" {
			bad = append(bad, fmt.Sprintf("%s %s at %s: %s after its wait ended with %s (an ended wait granted)", e.Op, e.Checkout, at, what, c.ended))
		}
	}
	return bad
}

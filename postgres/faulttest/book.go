package faulttest

import (
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// The Env's book: what the client was told about each checkout.

// sweepRec collects the checkouts whose claims, releases and extends
// overlapped a concurrent sweep: it may have skipped their rows.
type sweepRec struct{ cos map[int]bool }

// Entry is what the client was told about one checkout.
type Entry struct {
	Shop  int64
	Lines []holdfast.Line
	// Acked: a Reserve succeeded. Status is the last acknowledged status.
	Acked  bool
	Status holdfast.Status
	// Exp is a lower bound of the hold's expiry as acknowledged.
	Exp time.Time
	// Doubt: an operation on the checkout ended with an unknown outcome
	// after it was acknowledged (a claim or release may have happened).
	Doubt bool

	inflight, starts int       // claims and releases in flight, and started
	extending        int       // extends in flight
	extOverlap       bool      // an extend overlapped another
	endedAt          time.Time // when a claim or release was acknowledged
}

// entry returns the book entry of a checkout, creating it.
func (e *Env) entry(shop int64, co uuid.UUID, lines []holdfast.Line) (*Entry, int) {
	en, ok := e.book[co]
	if !ok {
		en = &Entry{Shop: shop, Lines: lines}
		e.book[co] = en
		e.coNum[co] = len(e.coNum) + 1
	}
	if en.Lines == nil {
		en.Lines = lines
	}
	return en, e.coNum[co]
}

// Register makes a checkout and its lines known before any operation on it
// is sent, so that operations racing its reservation are attributed to its
// key in the history.
func (e *Env) Register(shop int64, co uuid.UUID, lines []holdfast.Line) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(shop, co, lines)
}

// Acknowledge records what a client outside the Env's wrappers (the HTTP
// API) was told: a reservation (status held, with its expiry), a claim or a
// release succeeded. Doubt records an answer whose outcome is unknown.
func (e *Env) Acknowledge(shop int64, co uuid.UUID, status holdfast.Status, exp time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, _ := e.entry(shop, co, nil)
	if status == holdfast.StatusHeld {
		if !en.Acked {
			en.Exp = exp
			if en.endedAt.IsZero() {
				en.Status = status
			}
		}
		en.Acked = true
		return
	}
	en.Status = status
	if en.endedAt.IsZero() {
		en.endedAt = time.Now()
	}
}

// Doubt marks a checkout whose last operation's outcome is unknown.
func (e *Env) Doubt(shop int64, co uuid.UUID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, _ := e.entry(shop, co, nil)
	if en.Acked {
		en.Doubt = true
	}
}

package holdfast

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Fair drops (issue #30 item 7). A key may have a drop: reservations that
// reach it in the drop's window (StartsAt to StartsAt+Window) do not take
// units first come first served; each enters a lottery (one entry per
// buyer id) and waits (ErrWaitlisted). At the window's end one draw —
// exactly once across every process: a guarded state change of the drop's
// row — puts the entrants on the key's waitlist in lottery order, and the
// waitlist server holds their carts in that order as stock allows; the
// rest end as waits end (expired, unservable, cancelled). After the window
// the key is first come first served again, behind the entrants.
//
// The lottery is seeded, recorded and auditable: the seed is drawn at
// random when the drop is set and only its SHA-256 (Commitment) is
// published until the draw; the draw reveals it, and the order is the
// entrants sorted by HMAC-SHA256(seed, ticket), ticket being the entrant's
// buyer hash in hex (the keyed hash the engine stores instead of the buyer
// id). Anyone with the drop as Drop answers it after the draw can check it
// with VerifyDrop.

// Bounds of a drop.
const (
	// DropWindowMin bounds DropParams.Window from below.
	DropWindowMin = time.Second
	// DropWindowMax bounds DropParams.Window from above.
	DropWindowMax = 24 * time.Hour
	// DropLeadMax bounds how far ahead a drop may start.
	DropLeadMax = 30 * 24 * time.Hour
	// DropPastMax bounds how far in the past (by the caller's clock, not
	// the database's) DropParams.StartsAt may be: a little clock skew, not
	// a window that is already half over.
	DropPastMax = time.Minute
	// DropEntrantsMax bounds a drop's entrants: a checkout that would be
	// entrant DropEntrantsMax+1 is refused (ErrDropFull). The draw places
	// them all in one transaction.
	DropEntrantsMax = 5000
	// DropWaitDefault is how long an entrant waits after the draw when its
	// ReserveParams.Wait is zero (at most the client's WaitMax).
	DropWaitDefault = 15 * time.Minute
	// DropSeedBytes is the size of a drop's secret seed.
	DropSeedBytes = 32
	// DropDueMax bounds the drops whose window ended one pass of the
	// waitlist server draws.
	DropDueMax = 50
)

// DropState is where a drop is: open (before its draw), then drawn.
type DropState string

const (
	DropOpen  DropState = "open"
	DropDrawn DropState = "drawn"
)

// AuditDropSet and AuditDropDraw are the audit actions of SetDrop and of a
// drop's draw (with its seed, commitment, entrants and order).
const (
	AuditDropSet  = "drop.set"
	AuditDropDraw = "drop.draw"
)

// Errors of drops.
var (
	// ErrDropNotOpen: a reservation reached a key whose drop has not
	// started yet; nothing is held or entered. The error is a
	// *DropNotOpenError with the start. HTTP 409 drop_not_open.
	ErrDropNotOpen = errors.New("holdfast: drop not open yet")
	// ErrDropEntered: a reservation reached a key in its drop's window
	// under another checkout of a buyer who already entered the drop (one
	// entry per buyer id); nothing changes. Read the first checkout. HTTP
	// 409 drop_entered.
	ErrDropEntered = errors.New("holdfast: buyer already entered this drop")
	// ErrDropFull: the drop has DropEntrantsMax entrants already. HTTP 409
	// drop_full.
	ErrDropFull = errors.New("holdfast: drop has the most entrants it takes")
	// ErrDropStarted: SetDrop of a key whose drop window has begun and not
	// been drawn: its entrants are promised the draw as set. HTTP 409
	// drop_started.
	ErrDropStarted = errors.New("holdfast: drop already started")
)

// DropNotOpenError is ErrDropNotOpen with the drop's key and start.
type DropNotOpenError struct {
	Key      Key
	StartsAt time.Time
}

func (e *DropNotOpenError) Error() string {
	return fmt.Sprintf("holdfast: drop not open yet: item %d at location %d opens at %s", e.Key.ItemID, e.Key.LocationID, e.StartsAt.UTC().Format(time.RFC3339Nano))
}

func (e *DropNotOpenError) Is(target error) bool { return target == ErrDropNotOpen }

// DropParams sets a key's drop (SetDrop).
type DropParams struct {
	Key
	// StartsAt is when the window opens; the zero time is now.
	StartsAt time.Time
	// Window is how long it stays open: DropWindowMin to DropWindowMax,
	// whole seconds over HTTP.
	Window time.Duration
}

// Validate checks p against the drop bounds, now being the caller's
// clock. The error is an *ArgumentError.
func (p DropParams) Validate(now time.Time) error {
	if err := ValidateKey(p.Key); err != nil {
		return err
	}
	if p.Window < DropWindowMin || p.Window > DropWindowMax {
		return NewArgumentError("window", "must be between %v and %v", DropWindowMin, DropWindowMax)
	}
	if p.StartsAt.IsZero() {
		return nil
	}
	if p.StartsAt.Before(now.Add(-DropPastMax)) {
		return NewArgumentError("starts_at", "must not be more than %v in the past", DropPastMax)
	}
	if p.StartsAt.After(now.Add(DropLeadMax)) {
		return NewArgumentError("starts_at", "must be at most %v ahead", DropLeadMax)
	}
	return nil
}

// Drop is a key's drop as Drop answers it.
type Drop struct {
	Key
	StartsAt time.Time
	Window   time.Duration
	State    DropState
	// Commitment is the hex SHA-256 of the seed, published from the start.
	Commitment string
	// Seed is the hex seed, revealed by the draw (empty while open).
	Seed string
	// DrawnAt is when the draw ran (zero while open).
	DrawnAt time.Time
	// Entries is how many checkouts entered so far.
	Entries int
	// Entrants are, after the draw, every entrant in lottery order (Rank
	// 1 first); empty while open.
	Entrants []DropEntrant
}

// EndsAt is when the drop's window closes.
func (d *Drop) EndsAt() time.Time { return d.StartsAt.Add(d.Window) }

// DropEntrant is one entrant of a drawn drop.
type DropEntrant struct {
	Rank       int
	CheckoutID uuid.UUID
	// Ticket is the entrant's buyer hash, hex: what the lottery orders.
	Ticket string
}

// DropCommitment is the hex SHA-256 of seed.
func DropCommitment(seed []byte) string {
	s := sha256.Sum256(seed)
	return hex.EncodeToString(s[:])
}

// DropOrder answers the lottery order of tickets under seed: the indexes
// of tickets sorted by HMAC-SHA256(seed, ticket), ties (never seen in
// practice) by ticket.
func DropOrder(seed []byte, tickets []string) []int {
	type scored struct {
		i     int
		score []byte
	}
	s := make([]scored, len(tickets))
	for i, t := range tickets {
		m := hmac.New(sha256.New, seed)
		m.Write([]byte(t))
		s[i] = scored{i, m.Sum(nil)}
	}
	slices.SortFunc(s, func(a, b scored) int {
		if c := bytes.Compare(a.score, b.score); c != 0 {
			return c
		}
		return strings.Compare(tickets[a.i], tickets[b.i])
	})
	out := make([]int, len(s))
	for i, x := range s {
		out[i] = x.i
	}
	return out
}

// VerifyDrop checks a drawn drop as anyone can: its seed hashes to its
// commitment, and its entrants' ranks are the order DropOrder gives their
// tickets under that seed. nil when it holds.
func VerifyDrop(d *Drop) error {
	if d.State != DropDrawn {
		return errors.New("holdfast: drop not drawn yet")
	}
	seed, err := hex.DecodeString(d.Seed)
	if err != nil {
		return fmt.Errorf("holdfast: drop seed: %w", err)
	}
	if DropCommitment(seed) != d.Commitment {
		return errors.New("holdfast: drop seed does not match its commitment")
	}
	tickets := make([]string, len(d.Entrants))
	for i, e := range d.Entrants {
		tickets[i] = e.Ticket
	}
	for pos, i := range DropOrder(seed, tickets) {
		if d.Entrants[i].Rank != pos+1 {
			return fmt.Errorf("holdfast: entrant %s has rank %d, the lottery says %d", d.Entrants[i].CheckoutID, d.Entrants[i].Rank, pos+1)
		}
	}
	return nil
}

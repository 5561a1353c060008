package holdfast

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Bounds and defaults of the admin cancel and the audit log (issue #30
// item 6).
const (
	// AuditRetentionDefault is how long an audit entry is kept
	// (Config.AuditRetention).
	AuditRetentionDefault = 90 * 24 * time.Hour
	// CancelLimitDefault is how many holds one CancelHolds call ends when
	// CancelParams.Limit is 0.
	CancelLimitDefault = 100
	// CancelLimitMax bounds CancelParams.Limit: a larger Limit is an
	// *ArgumentError.
	CancelLimitMax = 500
	// CancelScanMax bounds the held holds one CancelHolds call examines
	// (its filters are applied to them); past it the call stops with More
	// set and a cursor, so one call stays short on a shop with many holds.
	CancelScanMax = 5000
	// CancelReasonMaxLen bounds CancelParams.Reason, in bytes.
	CancelReasonMaxLen = 500
	// AuditActionMaxLen bounds an audit action's name.
	AuditActionMaxLen = 32
)

// Audit actions: what an AuditEntry records.
const (
	AuditStockSet      = "stock.set"      // ChangeStock with Set (a stocktake)
	AuditStockAdjust   = "stock.adjust"   // ChangeStock with Delta
	AuditStockSafety   = "stock.safety"   // SetSafetyStock
	AuditStockPreorder = "stock.preorder" // SetPreorder
	AuditStockStrategy = "stock.strategy" // SetStrategy
	AuditHoldCancel    = "hold.cancel"    // one hold ended by CancelHolds
	AuditKeyCreate     = "key.create"     // an API key created
	AuditKeyRevoke     = "key.revoke"     // an API key revoked
	AuditKeyRotate     = "key.rotate"     // an API key rotated
	AuditBundleSet     = "bundle.set"     // SetBundle
	AuditBundleDelete  = "bundle.delete"  // DeleteBundle that removed one
)

// Actor is who makes a change, as the audit log records it: the API key
// that authenticated the request (KeyID, KeyName) and where it came from
// (Remote, RequestID), or with no key how the change was made (Via: "cli",
// "library"). The HTTP service and the CLI put it in the context
// (WithActor); a change made without one is recorded as Via "library".
type Actor struct {
	KeyID     int64
	KeyName   string
	Via       string
	Remote    string
	RequestID string
}

type actorKey struct{}

// WithActor returns ctx carrying a, for the audit log of the changes made
// with ctx.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the Actor ctx carries; without one, Via "library".
func ActorFrom(ctx context.Context) Actor {
	a, _ := ctx.Value(actorKey{}).(Actor)
	if a.KeyID == 0 && a.Via == "" {
		a.Via = "library"
	}
	return a
}

// Name is how the audit log names a: the key's name (its id when it has
// no name) when a key made the change, else Via.
func (a Actor) Name() string {
	switch {
	case a.KeyID != 0 && a.KeyName != "":
		return a.KeyName
	case a.KeyID != 0:
		return fmt.Sprintf("key %d", a.KeyID)
	case a.Via != "":
		return a.Via
	}
	return "library"
}

// AuditRecord is one audit entry as it is written, in the same
// transaction as the change it records: its time is the database's.
type AuditRecord struct {
	// ShopID is the shop the change is of; 0 for a change of the whole
	// deployment (an admin key's creation, revocation or rotation).
	ShopID int64
	Action string
	Actor  Actor
	// Detail is what changed, a JSON object.
	Detail json.RawMessage
}

// NewAuditRecord is the record of action on shop by ctx's actor, detail
// marshalled to JSON.
func NewAuditRecord(ctx context.Context, shop int64, action string, detail any) AuditRecord {
	b, err := json.Marshal(detail)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return AuditRecord{ShopID: shop, Action: action, Actor: ActorFrom(ctx), Detail: b}
}

// AuditEntry is one entry of the audit log: who (KeyID and Actor — the
// key's name, or "cli" or "library" when no key made the change), what
// (Action, Detail), when (CreatedAt, the database's clock) and from where
// (Remote, RequestID, over HTTP).
type AuditEntry struct {
	// ID orders the entries of a database; it is unique.
	ID        int64           `json:"id"`
	ShopID    int64           `json:"shop_id"`
	Action    string          `json:"action"`
	KeyID     int64           `json:"key_id,omitempty"`
	Actor     string          `json:"actor"`
	Remote    string          `json:"remote,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
	Detail    json.RawMessage `json:"detail"`
	CreatedAt time.Time       `json:"created_at"`
}

// AuditQuery asks for a page of a shop's audit log, newest first.
type AuditQuery struct {
	// ShopID is the shop; 0 lists the deployment's own entries (admin
	// keys' changes).
	ShopID int64
	// Action and KeyID keep the entries of that action and/or that key;
	// "" and 0 are any.
	Action string
	KeyID  int64
	// After is the Next of the previous page; "" is the first page.
	After string
	// Limit is the page size: 0 is ListLimitDefault, at most ListLimitMax.
	Limit int
}

// AuditPage is one page of the audit log. Next, when not empty, is the
// After of the next page. Paging is keyset pagination on the entry's ID:
// entries are append-only, so none is listed twice and none that existed
// before the first page is skipped (unless purged meanwhile).
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	Next    string       `json:"next,omitempty"`
}

// AuditCursor is the decoded position of an AuditQuery.After: the ID of
// the last entry listed and the query that issued it.
type AuditCursor struct {
	ID     int64
	ShopID int64
	KeyID  int64
	Action string
}

const (
	auditCursorPrefix = "a1."
	auditCursorLen    = 3*8 + AuditActionMaxLen
)

// Encode returns the cursor as the opaque After string.
func (c AuditCursor) Encode() string {
	var b [auditCursorLen]byte
	binary.BigEndian.PutUint64(b[:8], uint64(c.ID))
	binary.BigEndian.PutUint64(b[8:16], uint64(c.ShopID))
	binary.BigEndian.PutUint64(b[16:24], uint64(c.KeyID))
	copy(b[24:], c.Action)
	return auditCursorPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// validAction reports whether s is an audit action's shape: lower-case
// letters, dots and underscores, at most AuditActionMaxLen bytes.
func validAction(s string) bool {
	if s == "" || len(s) > AuditActionMaxLen {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && r != '.' && r != '_' {
			return false
		}
	}
	return true
}

// Validate checks q and returns it with its defaults filled in, and its
// cursor (nil on the first page). A rejected query is an *ArgumentError
// naming the field (shop_id, action, key_id, limit, cursor) or a
// *CursorError.
func (q AuditQuery) Validate() (AuditQuery, *AuditCursor, error) {
	if q.ShopID < 0 {
		return q, nil, NewArgumentError("shop_id", "must be a positive integer (0: the deployment's own entries)")
	}
	if q.Action != "" && !validAction(q.Action) {
		return q, nil, NewArgumentError("action", "must be an audit action such as %s, not %q", AuditStockSet, q.Action)
	}
	if q.KeyID < 0 {
		return q, nil, NewArgumentError("key_id", "must be a positive integer, or 0 for any")
	}
	var err error
	if q.Limit, err = checkLimit(q.Limit, ListLimitMax); err != nil {
		return q, nil, err
	}
	if q.After == "" {
		return q, nil, nil
	}
	b, err := decodeCursor(q.After, auditCursorPrefix, auditCursorLen)
	if err != nil {
		return q, nil, err
	}
	c := &AuditCursor{
		ID:     int64(binary.BigEndian.Uint64(b[:8])),
		ShopID: int64(binary.BigEndian.Uint64(b[8:16])),
		KeyID:  int64(binary.BigEndian.Uint64(b[16:24])),
		Action: strings.TrimRight(string(b[24:]), "\x00"),
	}
	if c.ShopID != q.ShopID || c.KeyID != q.KeyID || c.Action != q.Action {
		return q, nil, &CursorError{Reason: fmt.Sprintf("the cursor is of another audit listing (shop %d, key %d, action %q): list again from the first page", c.ShopID, c.KeyID, c.Action)}
	}
	return q, c, nil
}

// CancelParams asks CancelHolds to end a shop's held holds as an admin:
// those with a line on ItemID (and LocationID), of BuyerID, created more
// than OlderThan ago — at least one filter is required, and every filter
// given must match. Each hold is released (its units go back, its events
// and webhooks are a release's, waiters are served as on a release) and
// the audit log records it with Reason.
type CancelParams struct {
	ShopID     int64
	ItemID     int64
	LocationID int64
	// BuyerID is the buyer id the holds were reserved with.
	BuyerID string
	// OlderThan keeps the holds created more than OlderThan before the
	// database's now.
	OlderThan time.Duration
	// Reason is required (at most CancelReasonMaxLen bytes): the audit
	// log records it.
	Reason string
	// Limit is the most holds one call ends: 0 is CancelLimitDefault, at
	// most CancelLimitMax.
	Limit int
	// After is the Next of the previous call; "" starts from the newest
	// held hold.
	After string
}

// CancelledHold is one hold a CancelHolds call ended.
type CancelledHold struct {
	CheckoutID uuid.UUID `json:"checkout_id"`
	Lines      []Line    `json:"lines"`
}

// CancelResult is what one CancelHolds call ended: the holds (in the
// order examined, newest first) and the units each key got back. More
// says that held holds remain unexamined: call again with After = Next
// (the same filters) to go on. Holds that ended otherwise meanwhile
// (claimed, released, expired) are not in it: the call did not end them.
type CancelResult struct {
	Cancelled []CancelledHold `json:"cancelled"`
	Units     []KeyUnits      `json:"units"`
	More      bool            `json:"more"`
	Next      string          `json:"next,omitempty"`
}

// KeyUnits is a count of units of one key.
type KeyUnits struct {
	Key
	Units int `json:"units"`
}

// Validate checks p and returns it with its defaults filled in. A rejected
// call is an *ArgumentError naming the field (shop_id, item_id,
// location_id, buyer_id, older_than, reason, limit, filter).
func (p CancelParams) Validate() (CancelParams, error) {
	if p.ShopID <= 0 {
		return p, NewArgumentError("shop_id", "must be a positive integer")
	}
	if p.ItemID < 0 {
		return p, NewArgumentError("item_id", "must be a positive integer, or 0 for any")
	}
	if p.LocationID < 0 {
		return p, NewArgumentError("location_id", "must be a positive integer, or 0 for any")
	}
	if p.BuyerID != "" {
		if err := ValidateBuyerID(p.BuyerID); err != nil {
			return p, err
		}
	}
	if p.OlderThan < 0 {
		return p, NewArgumentError("older_than", "must be a positive duration, or 0 for any age")
	}
	if p.ItemID == 0 && p.LocationID == 0 && p.BuyerID == "" && p.OlderThan == 0 {
		return p, NewArgumentError("filter", "name at least one of item_id, location_id, buyer_id or older_than")
	}
	if strings.TrimSpace(p.Reason) == "" {
		return p, NewArgumentError("reason", "is required: the audit log records why the holds were cancelled")
	}
	if len(p.Reason) > CancelReasonMaxLen {
		return p, NewArgumentError("reason", "must be at most %d bytes", CancelReasonMaxLen)
	}
	switch {
	case p.Limit == 0:
		p.Limit = CancelLimitDefault
	case p.Limit < 0 || p.Limit > CancelLimitMax:
		return p, NewArgumentError("limit", "must be between 1 and %d (0 for %d)", CancelLimitMax, CancelLimitDefault)
	}
	return p, nil
}

// Package webhook delivers a shop's event feed (holdfast.Engine.Events) to
// the HTTP(S) endpoints the shop's admin registered: the registry (stored
// next to the API keys: PostgreSQL's migration 008, MySQL/MariaDB's 009),
// the signature a
// receiver verifies, and the delivery pool holdfast serve runs.
//
// Delivery is at least once, in cursor order per endpoint (so in cursor
// order per checkout), one event per request. A failed delivery is retried
// with exponential backoff (BackoffMin doubling up to BackoffMax) until the
// retry horizon (Horizon) after its first failure; then the event becomes a
// dead letter (listed by the API and counted by the doctor) and delivery
// moves on; the horizon counts from each event's own first failure. While
// an event is retried, the endpoint's later events wait: that is what
// keeps each checkout's events in order. The feed keeps events an
// endpoint has not received past the engine's EventRetention, up to its
// EventRetentionMax; events purged before delivery become one dead letter.
//
// Every endpoint with events is served in turn, oldest due first, however
// many there are (Config.Slice bounds a turn, and so the wait for a
// worker). Destinations must be public addresses unless
// Options.AllowNetworks lists their network, checked at registration and
// again at every connect; secrets are sealed at rest with
// Options.SecretKey (docs/DESIGN.md).
//
// Each request carries the header
//
//	Holdfast-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
//
// A receiver recomputes the HMAC over the timestamp, a dot and the raw body
// with the endpoint's secret, compares in constant time, and refuses a
// timestamp older than its tolerance (Verify does all of this; 5 minutes
// by default): a captured request cannot be replayed later. Deliveries may
// repeat (at least once): deduplicate on Holdfast-Event-Cursor per shop.
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/holdfast/holdfast"
)

// Headers of a delivery.
const (
	SignatureHeader = "Holdfast-Signature"
	CursorHeader    = "Holdfast-Event-Cursor"
	EndpointHeader  = "Holdfast-Webhook-Id"
)

// Bounds of the registry.
const (
	// URLMaxLen bounds an endpoint's URL.
	URLMaxLen = 2000
	// EndpointsPerShopMax bounds a shop's endpoints.
	EndpointsPerShopMax = 20
	// DeadLettersLimitMax bounds one listing of dead letters.
	DeadLettersLimitMax = 1000
	// ToleranceDefault is how old a signature's timestamp Verify accepts
	// when given a zero tolerance.
	ToleranceDefault = 5 * time.Minute
)

// Endpoint is a registered webhook target. Its secret is shown only when
// it is registered.
type Endpoint struct {
	ID     int64  `json:"id"`
	ShopID int64  `json:"shop_id"`
	URL    string `json:"url"`
	// Cursor is the last event delivered (or dead-lettered).
	Cursor int64 `json:"cursor"`
	// Attempts, NextAt and LastError describe a delivery being retried.
	Attempts    int        `json:"attempts"`
	NextAt      *time.Time `json:"next_attempt_at,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	DeadLetters int        `json:"dead_letters"`
	// Secret is set only in the answer to Add.
	Secret string `json:"secret,omitempty"`
}

// DeadLetter is an event an endpoint did not accept within the horizon,
// or events purged from the feed before it received them (kept for it up
// to holdfast.Config.EventRetentionMax): then Cursor is the last of them
// and Event is {"shop_id", "purged_from", "purged_to"} (cursors,
// inclusive).
type DeadLetter struct {
	ID         int64           `json:"id"`
	EndpointID int64           `json:"endpoint_id"`
	ShopID     int64           `json:"shop_id"`
	Cursor     int64           `json:"cursor"`
	Event      json.RawMessage `json:"event"`
	Attempts   int             `json:"attempts"`
	LastError  string          `json:"last_error"`
	DeadAt     time.Time       `json:"dead_at"`
}

// ErrNotFound: no such endpoint in the shop.
var ErrNotFound = errors.New("webhook: no such endpoint")

// ErrTooMany: the shop has EndpointsPerShopMax endpoints already.
var ErrTooMany = errors.New("webhook: the shop has the most endpoints allowed")

// ErrLeaseLost is what a Store answers a deliverer's write (Delivered,
// Failed, DeadLetter, Unlease) made with a lease token that is no longer
// the endpoint's: its lease ran out and another deliverer leased the
// endpoint since (or the endpoint was removed). The write changed nothing;
// the deliverer stops working on the endpoint and leaves it to the one
// holding it now, which resumes from the cursor stored (at least once).
var ErrLeaseLost = errors.New("webhook: the endpoint's lease was lost to another deliverer")

// Registry is the endpoints of every shop, in a Store. Safe for concurrent
// use.
type Registry struct {
	st   Store
	opts Options
	seq  Sequencer
}

// Sequencer is an engine's sequencing pass (postgres.Client and
// mysql.Client have it): it numbers the events committed before the call.
type Sequencer interface {
	SequenceEvents(ctx context.Context) (int, error)
}

// SequencedBy returns the registry with s: Add without after first runs
// s's sequencing pass, so the key events the sequencer derives from events
// committed before the registration are numbered before the endpoint's
// start too (without it, Add still starts after every event committed
// before it, counting those not yet numbered).
func (r *Registry) SequencedBy(s Sequencer) *Registry {
	c := *r
	c.seq = s
	return &c
}

// With returns the registry with o: the destinations it accepts and the
// key it encrypts secrets with.
func (r *Registry) With(o Options) *Registry {
	c := *r
	c.opts = o
	return &c
}

// NewRegistry returns the registry kept in st (pgstore.Webhooks,
// mysqlstore.Webhooks).
func NewRegistry(st Store) *Registry { return &Registry{st: st} }

func argError(field, format string, args ...any) error {
	return &holdfast.ArgumentError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ValidateURL accepts only absolute http and https URLs with a host, no
// user info and no fragment, at most URLMaxLen bytes.
func ValidateURL(raw string) error {
	if raw == "" {
		return argError("url", "required")
	}
	if len(raw) > URLMaxLen {
		return argError("url", "at most %d bytes", URLMaxLen)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return argError("url", "not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return argError("url", "must be an http:// or https:// URL")
	case u.Host == "" || u.Hostname() == "":
		return argError("url", "must name a host")
	case u.User != nil:
		return argError("url", "must not carry user info (the signature authenticates deliveries)")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return argError("url", "must not have a fragment")
	}
	return nil
}

func validShop(shop int64) error {
	if shop <= 0 {
		return argError("shop_id", "must be positive")
	}
	return nil
}

// Add registers rawURL for shop and returns the endpoint with its secret
// (shown only now; stored encrypted with Options.SecretKey). Delivery
// starts after cursor after, or when after is nil after every event of the
// shop committed before the call: the feed's head plus the shop's events
// not yet numbered by the sequencer (numbered next, per shop in a row), so
// the endpoint's cursor may be ahead of the feed's head for a moment. An
// event committing concurrently with the registration may fall on either
// side. Bad input, and a host that is or resolves to an address
// that is not public and not allowed (ErrDestinationRefused), is an
// *holdfast.ArgumentError on its field and writes nothing.
func (r *Registry) Add(ctx context.Context, shop int64, rawURL string, after *int64) (*Endpoint, error) {
	if err := validShop(shop); err != nil {
		return nil, err
	}
	if err := ValidateURL(rawURL); err != nil {
		return nil, err
	}
	if after != nil && *after < 0 {
		return nil, argError("after", "must not be negative")
	}
	u, _ := url.Parse(rawURL)
	if err := checkHost(ctx, u.Hostname(), r.opts.AllowNetworks); err != nil {
		return nil, argError("url", "%v", err)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	secret := "whsec_" + hex.EncodeToString(b)
	stored, err := sealSecret(r.opts.SecretKey, shop, b, secret)
	if err != nil {
		return nil, err
	}
	if after == nil && r.seq != nil {
		if _, err := r.seq.SequenceEvents(ctx); err != nil {
			return nil, err
		}
	}
	ep, err := r.st.InsertEndpoint(ctx, shop, rawURL, stored, after, EndpointsPerShopMax)
	if err != nil {
		return nil, err
	}
	ep.Secret = secret
	return ep, nil
}

// List returns a shop's endpoints, without secrets.
func (r *Registry) List(ctx context.Context, shop int64) ([]Endpoint, error) {
	if err := validShop(shop); err != nil {
		return nil, err
	}
	return r.st.ListEndpoints(ctx, shop)
}

// Remove deletes a shop's endpoint and its dead letters and returns the
// endpoint as it was, DeadLetters counting the dead letters removed with
// it; ErrNotFound when the shop has no such endpoint.
func (r *Registry) Remove(ctx context.Context, shop, id int64) (*Endpoint, error) {
	if err := validShop(shop); err != nil {
		return nil, err
	}
	if id <= 0 {
		return nil, argError("webhook_id", "must be positive")
	}
	return r.st.DeleteEndpoint(ctx, shop, id)
}

// DeadLetters returns a shop's dead letters, newest first, at most limit
// (1..DeadLettersLimitMax).
func (r *Registry) DeadLetters(ctx context.Context, shop int64, limit int) ([]DeadLetter, error) {
	if err := validShop(shop); err != nil {
		return nil, err
	}
	if limit < 1 || limit > DeadLettersLimitMax {
		return nil, argError("limit", "must be between 1 and %d", DeadLettersLimitMax)
	}
	return r.st.DeadLetters(ctx, shop, limit)
}

// Sign returns the Holdfast-Signature header value for body sent at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("webhook: signature does not match")
	ErrStale        = errors.New("webhook: signature timestamp outside the tolerance (a replay?)")
	ErrNoSignature  = errors.New("webhook: malformed or missing " + SignatureHeader + " header")
)

// Verify checks a Holdfast-Signature header against body and secret: the
// HMAC must match (compared in constant time) and the timestamp must be
// within tolerance of now (0: ToleranceDefault), else ErrBadSignature,
// ErrStale or ErrNoSignature.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = ToleranceDefault
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrNoSignature
	}
	want := mac(secret, ts, body)
	ok := false
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			ok = true
		}
	}
	if !ok {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	return nil
}

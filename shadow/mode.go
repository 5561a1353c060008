package shadow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/holdfast/holdfast"
)

// Mode is where a shop is in its move from the legacy store to holdfast.
type Mode string

const (
	// ModeLegacy: the legacy store only. holdfast is not written (stock
	// changes excepted, so holdfast has the stock when shadowing starts).
	ModeLegacy Mode = "legacy"
	// ModeShadow: the legacy is the truth and answers; holdfast gets the
	// same operation and the outcomes are compared.
	ModeShadow Mode = "shadow"
	// ModePrimary: holdfast is the truth and answers; the legacy is still
	// written, so reverting to it (the kill switch) stays one switch.
	ModePrimary Mode = "primary"
	// ModeHoldfast: holdfast only; the legacy is no longer written.
	ModeHoldfast Mode = "holdfast"
)

// Modes lists the modes in their forward order.
var Modes = []Mode{ModeLegacy, ModeShadow, ModePrimary, ModeHoldfast}

func (m Mode) index() int {
	for i, x := range Modes {
		if x == m {
			return i
		}
	}
	return -1
}

// Valid reports whether m names a mode.
func (m Mode) Valid() bool { return m.index() >= 0 }

// Next is the mode one step forward, "" after ModeHoldfast.
func (m Mode) Next() Mode {
	if i := m.index(); i >= 0 && i+1 < len(Modes) {
		return Modes[i+1]
	}
	return ""
}

// ParseMode returns the mode named s, or an *ArgumentError-like
// ErrUnknownMode.
func ParseMode(s string) (Mode, error) {
	if m := Mode(s); m.Valid() {
		return m, nil
	}
	return "", &ModeError{Err: ErrUnknownMode, Mode: Mode(s)}
}

// Errors of the mode operations. Each changes nothing.
var (
	// ErrUnknownShop: the shop is not enrolled in the layer (Enroll).
	ErrUnknownShop = errors.New("shadow: unknown shop")
	// ErrUnknownMode: the mode is not legacy, shadow, primary or holdfast.
	ErrUnknownMode = errors.New("shadow: unknown mode")
	// ErrSkippedMode: modes move forward one step at a time
	// (legacy → shadow → primary → holdfast); only the way back to legacy
	// (the kill switch) may jump.
	ErrSkippedMode = errors.New("shadow: mode change skips a mode")
	// ErrWarming: shadow → primary while the shop's pre-shadow holds may
	// still be live (HoldLifetimeMax after it entered shadow). holdfast does
	// not know them; making it the truth now could oversell. Wait for
	// ReadyAt.
	ErrWarming = errors.New("shadow: shop still warming")
)

// ModeError is a refused mode change. It matches its Err with errors.Is.
type ModeError struct {
	Err     error
	Shop    int64
	From    Mode
	Mode    Mode
	ReadyAt time.Time // for ErrWarming
}

func (e *ModeError) Error() string {
	switch e.Err {
	case ErrUnknownMode:
		return fmt.Sprintf("shadow: unknown mode %q (want legacy, shadow, primary or holdfast)", e.Mode)
	case ErrUnknownShop:
		return fmt.Sprintf("shadow: unknown shop %d (enroll it first)", e.Shop)
	case ErrSkippedMode:
		return fmt.Sprintf("shadow: shop %d cannot go from %s to %s: modes move one step forward (next is %s) or back to legacy", e.Shop, e.From, e.Mode, e.From.Next())
	case ErrWarming:
		return fmt.Sprintf("shadow: shop %d is warming until %s: its pre-shadow holds may still be live in the legacy store only", e.Shop, e.ReadyAt.Format(time.RFC3339))
	}
	return e.Err.Error()
}

func (e *ModeError) Unwrap() error { return e.Err }

// checkStep reports whether from → to is a legal step.
func checkStep(shop int64, from, to Mode) error {
	if !to.Valid() {
		return &ModeError{Err: ErrUnknownMode, Shop: shop, Mode: to}
	}
	if to == from || to == ModeLegacy || to == from.Next() {
		return nil
	}
	return &ModeError{Err: ErrSkippedMode, Shop: shop, From: from, Mode: to}
}

// ShopMode is a shop's mode as the layer holds it.
type ShopMode struct {
	ShopID      int64     `json:"shop_id"`
	Mode        Mode      `json:"mode"`
	ShadowSince time.Time `json:"shadow_since,omitzero"`
	ChangedAt   time.Time `json:"changed_at"`
}

// modeTable is one snapshot of every shop's mode.
type modeTable struct {
	revision int64
	shops    map[int64]ShopMode
	loaded   time.Time
}

// Enroll adds shops to the layer in ModeLegacy. Enrolling an enrolled shop
// changes nothing.
func (e *Engine) Enroll(ctx context.Context, shops ...int64) error {
	for _, s := range shops {
		if s <= 0 {
			return &ModeError{Err: ErrUnknownShop, Shop: s}
		}
	}
	if err := e.st.Enroll(ctx, shops); err != nil {
		return fmt.Errorf("shadow: enroll: %w", err)
	}
	return e.Refresh(ctx)
}

// SetMode moves one shop to mode, after checking the step is legal (one
// step forward, or back to legacy from anywhere), and applies it on this
// replica at once; the others apply it within Config.PollInterval. Setting
// the current mode again changes nothing. reason goes to the audit trail.
// Errors are *ModeError matching ErrUnknownShop, ErrUnknownMode,
// ErrSkippedMode or ErrWarming; none changes anything.
func (e *Engine) SetMode(ctx context.Context, shop int64, to Mode, reason string) error {
	if !to.Valid() {
		return &ModeError{Err: ErrUnknownMode, Shop: shop, Mode: to}
	}
	if reason == "" {
		reason = "set"
	}
	if to == ModeShadow && (e.old == nil || e.hf == nil) {
		// Entering shadow seeds holdfast's stock from the legacy ledger.
		return fmt.Errorf("shadow: shop %d to shadow: %w", shop, ErrNoBackends)
	}
	var enteringShadow bool
	found, err := e.st.ChangeMode(ctx, shop, func(from Mode, since *time.Time, now time.Time) (*ModeChange, error) {
		if err := checkStep(shop, from, to); err != nil {
			return nil, err
		}
		if from == to {
			return nil, nil
		}
		if e.cfg.Now != nil {
			now = e.cfg.Now()
		}
		if from == ModeShadow && to == ModePrimary && since != nil {
			if ready := since.Add(e.cfg.HoldLifetimeMax); now.Before(ready) {
				return nil, &ModeError{Err: ErrWarming, Shop: shop, From: from, Mode: to, ReadyAt: ready}
			}
		}
		var nowArg *time.Time
		if e.cfg.Now != nil {
			nowArg = &now
		}
		enteringShadow = from == ModeLegacy && to == ModeShadow
		return &ModeChange{From: from, To: to, EnteringShadow: enteringShadow, Reason: reason, Now: nowArg}, nil
	})
	if err == nil && !found {
		err = &ModeError{Err: ErrUnknownShop, Shop: shop, Mode: to}
	}
	if err != nil {
		var me *ModeError
		if errors.As(err, &me) {
			return err
		}
		return fmt.Errorf("shadow: set mode: %w", err)
	}
	if err := e.Refresh(ctx); err != nil {
		return err
	}
	if enteringShadow {
		if _, err := e.SyncStock(ctx, shop); err != nil {
			return fmt.Errorf("shadow: shop %d is in shadow but its stock was not seeded from the legacy ledger (run SyncStock): %w", shop, err)
		}
	}
	return nil
}

// SyncStock sets holdfast's available stock of every key holdfast stocks
// for the shop to the legacy ledger's on-hand. SetMode runs it when a shop
// enters shadow, so holdfast starts from the legacy's ledger, claims made
// while holdfast was not written included. It returns the keys it changed.
func (e *Engine) SyncStock(ctx context.Context, shop int64) (int, error) {
	rec, err := e.Reconcile(ctx, shop)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range rec.Drift {
		if d.LegacyOnHand == int64(d.Available) {
			continue
		}
		set := int(max(d.LegacyOnHand, 0))
		if _, err := e.hf.ChangeStock(ctx, holdfast.StockChange{Key: d.Key, Set: &set, Reason: "shadow: seeded from the legacy ledger"}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Promote moves one shop one step forward.
func (e *Engine) Promote(ctx context.Context, shop int64) (Mode, error) {
	cur, ok := e.Mode(shop)
	if !ok {
		if err := e.Refresh(ctx); err != nil {
			return "", err
		}
		if cur, ok = e.Mode(shop); !ok {
			return "", &ModeError{Err: ErrUnknownShop, Shop: shop}
		}
	}
	next := cur.Next()
	if next == "" {
		return cur, &ModeError{Err: ErrSkippedMode, Shop: shop, From: cur, Mode: cur}
	}
	return next, e.SetMode(ctx, shop, next, "promote")
}

// Revert is the kill switch: the shop goes back to legacy truth at once.
// Safe from shadow and primary, because the legacy was written all along;
// from holdfast the legacy missed everything since, so run Reconcile first.
func (e *Engine) Revert(ctx context.Context, shop int64) error {
	return e.SetMode(ctx, shop, ModeLegacy, "revert")
}

// RevertAll is the kill switch for every enrolled shop. It returns the
// shops it reverted.
func (e *Engine) RevertAll(ctx context.Context) ([]int64, error) {
	if err := e.Refresh(ctx); err != nil {
		return nil, err
	}
	var done []int64
	for _, m := range e.ShopModes() {
		if m.Mode == ModeLegacy {
			continue
		}
		if err := e.SetMode(ctx, m.ShopID, ModeLegacy, "revert all"); err != nil {
			return done, err
		}
		done = append(done, m.ShopID)
	}
	return done, nil
}

// Mode is the shop's mode on this replica; false when it is not enrolled
// (its operations then run in Config.DefaultMode).
func (e *Engine) Mode(shop int64) (Mode, bool) {
	m, ok := e.modes.Load().shops[shop]
	return m.Mode, ok
}

// ShopModes lists every enrolled shop's mode on this replica.
func (e *Engine) ShopModes() []ShopMode {
	t := e.modes.Load()
	out := make([]ShopMode, 0, len(t.shops))
	for _, m := range t.shops {
		out = append(out, m)
	}
	sortShops(out)
	return out
}

// Refresh reloads the modes from the database when they changed.
func (e *Engine) Refresh(ctx context.Context) error {
	rev, err := e.st.ModesRevision(ctx)
	if err != nil {
		return fmt.Errorf("shadow: poll modes: %w", err)
	}
	if cur := e.modes.Load(); cur.revision == rev && !cur.loaded.IsZero() {
		return nil
	}
	modes, modesRev, err := e.st.Modes(ctx)
	if err != nil {
		return fmt.Errorf("shadow: load modes: %w", err)
	}
	t := &modeTable{revision: rev, shops: map[int64]ShopMode{}, loaded: time.Now()}
	if modesRev != 0 {
		t.revision = modesRev
	}
	for _, m := range modes {
		t.shops[m.ShopID] = m
	}
	e.mu.Lock()
	if cur := e.modes.Load(); cur.revision <= t.revision {
		e.modes.Store(t)
	}
	e.mu.Unlock()
	e.notifyChange()
	for _, m := range t.shops {
		for _, mm := range Modes {
			v := 0.0
			if mm == m.Mode {
				v = 1
			}
			e.metrics.mode.WithLabelValues(shopLabel(m.ShopID), string(mm)).Set(v)
		}
	}
	return nil
}

// WaitMode waits until this replica applies mode for shop, or ctx ends. It
// is how a test (or an operator's tool) waits on a change made elsewhere.
func (e *Engine) WaitMode(ctx context.Context, shop int64, mode Mode) error {
	for {
		ch := e.changed()
		if m, _ := e.Mode(shop); m == mode {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			m, _ := e.Mode(shop)
			return fmt.Errorf("shadow: shop %d still %s, waiting for %s: %w", shop, m, mode, ctx.Err())
		}
	}
}

func (e *Engine) changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.change
}

func (e *Engine) notifyChange() {
	e.mu.Lock()
	defer e.mu.Unlock()
	close(e.change)
	e.change = make(chan struct{})
}

package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/holdfast/holdfast"
)

// A key page shows the key's pre-order setting and its drop (issue #30
// items 2 and 7), read through Engine.Preorder and Engine.Drop; a shop's
// drops and pre-orders page lists its latest drop and pre-order settings
// from its audit log (Engine.Audit by action): the engine has no listing
// of a shop's drops or pre-order keys.

// Bounds of the drop and pre-order panels.
const (
	// DropEntrantsShown bounds the entrants a key page lists of a drawn
	// drop; each listed entrant's outcome is one Engine.Hold read.
	DropEntrantsShown = 10
	// SettingsShown bounds the audit entries a shop page reads of each of
	// drop.set and stock.preorder (the newest; one row per key).
	SettingsShown = 10
)

// preorderView is a key's pre-order setting as its page shows it.
type preorderView struct {
	On                    bool
	Cap, Held, Owed, Left int
	ExpectedAt            string
}

func (c *Console) preorderView(ctx context.Context, k holdfast.Key) (*preorderView, error) {
	p, err := c.cfg.Engine.Preorder(ctx, k)
	if err != nil {
		return nil, err
	}
	v := &preorderView{On: p.Cap > 0, Cap: p.Cap, Held: p.Held, Owed: p.Owed, Left: p.Headroom}
	if !p.ExpectedAt.IsZero() {
		v.ExpectedAt = stamp(p.ExpectedAt)
	}
	return v, nil
}

// dropView is a key's drop as its page shows it.
type dropView struct {
	StartsAt, EndsAt, Window string
	// State is the engine's (open or drawn); Phase says where the window
	// is by this server's clock: scheduled, open, closed (draw due) or
	// drawn.
	State, Phase string
	Entries      int
	Commitment   string
	// After the draw: the revealed seed, when, and whether VerifyDrop
	// (run here) checks the order against the commitment.
	Seed, DrawnAt string
	Verified      bool
	VerifyError   string
	Entrants      []entrantView
	// Hidden is how many entrants are not listed (past
	// DropEntrantsShown); Outcomes counts the listed ones' outcomes.
	Hidden   int
	Outcomes string
}

type entrantView struct {
	Rank       int
	CheckoutID string
	Ticket     string
	Outcome    string
}

// dropPhase is where d's window is at now.
func dropPhase(d *holdfast.Drop, now time.Time) string {
	switch {
	case d.State == holdfast.DropDrawn:
		return "drawn"
	case now.Before(d.StartsAt):
		return "scheduled"
	case now.Before(d.EndsAt()):
		return "open"
	}
	return "closed, draw due"
}

// dropView reads k's drop: nil when it has none.
func (c *Console) dropView(ctx context.Context, k holdfast.Key) (*dropView, error) {
	d, err := c.cfg.Engine.Drop(ctx, k)
	if errors.Is(err, holdfast.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v := &dropView{StartsAt: stamp(d.StartsAt), EndsAt: stamp(d.EndsAt()), Window: d.Window.String(),
		State: string(d.State), Phase: dropPhase(d, time.Now()), Entries: d.Entries, Commitment: d.Commitment}
	if d.State != holdfast.DropDrawn {
		return v, nil
	}
	v.Seed = d.Seed
	if !d.DrawnAt.IsZero() {
		v.DrawnAt = stamp(d.DrawnAt)
	}
	if err := holdfast.VerifyDrop(d); err != nil {
		v.VerifyError = err.Error()
	} else {
		v.Verified = true
	}
	shown := d.Entrants[:min(len(d.Entrants), DropEntrantsShown)]
	v.Hidden = len(d.Entrants) - len(shown)
	counts := map[string]int{}
	var order []string
	for _, e := range shown {
		out, err := c.outcome(ctx, k.ShopID, e)
		if err != nil {
			return nil, err
		}
		v.Entrants = append(v.Entrants, entrantView{Rank: e.Rank, CheckoutID: e.CheckoutID.String(), Ticket: e.Ticket, Outcome: out})
		kind, _, _ := strings.Cut(out, " (")
		if counts[kind] == 0 {
			order = append(order, kind)
		}
		counts[kind]++
	}
	parts := make([]string, len(order))
	for i, kind := range order {
		parts[i] = fmt.Sprintf("%s %d", kind, counts[kind])
	}
	v.Outcomes = strings.Join(parts, " · ")
	return v, nil
}

// outcome is what became of an entrant's checkout, as Engine.Hold says
// it: the hold's status, or where its wait is.
func (c *Console) outcome(ctx context.Context, shop int64, e holdfast.DropEntrant) (string, error) {
	h, err := c.cfg.Engine.Hold(ctx, shop, e.CheckoutID)
	var we *holdfast.WaitlistedError
	switch {
	case err == nil:
		return string(h.Status), nil
	case errors.As(err, &we):
		if we.Position == 0 {
			return "waiting", nil
		}
		return fmt.Sprintf("waiting (position %d)", we.Position), nil
	case errors.Is(err, holdfast.ErrWaitExpired):
		return "wait expired", nil
	case errors.Is(err, holdfast.ErrWaitCancelled):
		return "wait cancelled", nil
	case errors.Is(err, holdfast.ErrWaitUnservable):
		return "unservable", nil
	case errors.Is(err, holdfast.ErrNotFound):
		return "gone (past the retention window)", nil
	}
	return "", err
}

// setting is one key's newest drop or pre-order setting in a shop's
// audit log.
type setting struct {
	ItemID     int64 `json:"item_id"`
	LocationID int64 `json:"location_id"`
	// Drops: the window as set.
	StartsAt      *time.Time `json:"starts_at"`
	WindowSeconds float64    `json:"window_seconds"`
	// Pre-orders: the cap and date as set.
	Cap        int        `json:"cap"`
	ExpectedAt *time.Time `json:"expected_at"`
	// At is when it was set; Says is the setting in words.
	At   string `json:"-"`
	Says string `json:"-"`
}

// settings reads the newest SettingsShown audit entries of action in
// shop, one row per key (its newest).
func (c *Console) settings(ctx context.Context, shop int64, action string) ([]setting, error) {
	page, err := c.cfg.Engine.Audit(ctx, holdfast.AuditQuery{ShopID: shop, Action: action, Limit: SettingsShown})
	if err != nil {
		return nil, err
	}
	seen := map[[2]int64]bool{}
	var out []setting
	for _, e := range page.Entries {
		var s setting
		if err := json.Unmarshal(e.Detail, &s); err != nil || s.ItemID == 0 {
			continue
		}
		k := [2]int64{s.ItemID, s.LocationID}
		if seen[k] {
			continue
		}
		seen[k] = true
		s.At = stamp(e.CreatedAt)
		switch {
		case action == holdfast.AuditDropSet && s.StartsAt != nil:
			s.Says = fmt.Sprintf("window %s to %s", stamp(*s.StartsAt), stamp(s.StartsAt.Add(time.Duration(s.WindowSeconds*float64(time.Second)))))
		case action == holdfast.AuditStockPreorder && s.Cap == 0:
			s.Says = "pre-orders off"
		case action == holdfast.AuditStockPreorder && s.ExpectedAt != nil:
			s.Says = fmt.Sprintf("cap %d, expected %s", s.Cap, stamp(*s.ExpectedAt))
		}
		out = append(out, s)
	}
	return out, nil
}

// sales is a shop's drops and pre-orders: the keys its audit log says they
// were set on. A page of its own, not the shop page's: the reads walk the
// shop's audit log newest first until they find SettingsShown entries of
// each action, which on a shop with a long log takes a while (measured by
// TestShopSettingsCost).
func (c *Console) sales(w http.ResponseWriter, r *http.Request, _ int64) error {
	shop, err := pathID(r, "shop")
	if err != nil {
		return err
	}
	if len(r.URL.RawQuery) > 0 {
		return badInput("the drops and pre-orders page takes no query parameters")
	}
	drops, err := c.settings(r.Context(), shop, holdfast.AuditDropSet)
	if err != nil {
		return err
	}
	preorders, err := c.settings(r.Context(), shop, holdfast.AuditStockPreorder)
	if err != nil {
		return err
	}
	c.render(w, r, http.StatusOK, "sales", map[string]any{"Authed": true, "Title": fmt.Sprintf("Shop %d: drops and pre-orders", shop),
		"Shop": shop, "Drops": drops, "Preorders": preorders, "SettingsShown": SettingsShown})
	return nil
}

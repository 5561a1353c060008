// Package console is holdfast's operator console: server-rendered HTML
// pages (html/template) with a small, dependency-free script, served by
// `holdfast serve` under /console (package httpapi mounts it). Everything
// it needs is embedded: it works without network access.
//
// Operators log in with an admin API key; the console then keeps a signed,
// HttpOnly, SameSite=Strict session cookie naming the key, and checks on
// every request that the key is still a live admin key. It reads only:
// per shop the keys by activity (available, held, pooled, sellable) and
// recent holds, updated live by polling a small JSON endpoint, and (a
// page of its own) its latest drop and pre-order settings; a key's holds
// and ledger, its pre-orders and its drop (a drawn drop's lottery checked
// with holdfast.VerifyDrop); a hold and what became of it; the doctor's
// findings; charts of new holds per second and reservation p99 latency,
// per shop and server-wide, from the answers the server reports to
// Observe; and, when the server runs the shadow layer, each shop's mode
// and agreement.
package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/shadow"
	"github.com/holdfast/holdfast/webhook"
)

// Bounds and defaults of the console.
const (
	// Prefix is where the console is served.
	Prefix = "/console"
	// SessionTTLDefault is how long a login lasts.
	SessionTTLDefault = 8 * time.Hour
	// ChartIntervalDefault is the interval a chart's point stands for.
	ChartIntervalDefault = 5 * time.Second
	// ChartPoints bounds the intervals a chart draws (10 minutes at the
	// default interval).
	ChartPoints = 120
	// LiveKeys and LiveHolds bound a shop page's live tables.
	LiveKeys  = 20
	LiveHolds = 20
	// LiveEvents bounds a shop page's recent events.
	LiveEvents = 20
	// PageSize is the size of a key page's holds and ledger pages.
	PageSize = 25
	// ShopsMax bounds the shops listed on the overview.
	ShopsMax = 100
	// DoctorTimeout bounds the doctor's run behind the doctor page.
	DoctorTimeout = 20 * time.Second
	// ReadsMax bounds the console's requests that read the database at
	// once (over every operator and tab): the console shares the engine's
	// pool with checkout and must never crowd it. Others wait for a turn
	// within their own request.
	ReadsMax = 2
	// keyMaxLen bounds a key typed into the login form.
	keyMaxLen = 256
)

// Config configures a Console. Engine and Authenticate are required.
type Config struct {
	// Engine is what the console reads through.
	Engine holdfast.Engine
	// Authenticate checks an API key typed at login or sent as a bearer
	// key: its id and whether it is an admin key. An unknown, revoked or
	// expired key is an error.
	Authenticate func(ctx context.Context, key string) (id int64, admin bool, err error)
	// AdminLive reports whether the key with this id is still a live admin
	// key; asked on every request of a session. Required.
	AdminLive func(ctx context.Context, id int64) (bool, error)
	// Shops lists shop ids for the overview (at most n). Optional.
	Shops func(ctx context.Context, n int) ([]int64, error)
	// Doctor runs the doctor. Optional: without it the doctor page says so.
	Doctor func(ctx context.Context) (*health.Report, error)
	// EventsHead returns the shop's newest event cursor (0: none yet), so
	// the shop page can show the most recent events of Engine.Events.
	// Optional: without it the page has no events panel.
	EventsHead func(ctx context.Context, shop int64) (int64, error)
	// Webhooks lists a shop's webhook endpoints with their delivery state.
	// Optional: without it the page has no webhooks panel.
	Webhooks func(ctx context.Context, shop int64) ([]webhook.Endpoint, error)
	// Shadow is the shadow layer when the server runs one. Optional.
	Shadow *shadow.Engine
	// Secret signs session cookies. Defaults to 32 random bytes made at
	// New: sessions then end when the process does, and do not carry to
	// other replicas.
	Secret []byte
	// SessionTTL is how long a login lasts. Defaults to SessionTTLDefault.
	SessionTTL time.Duration
	// ChartInterval is the interval a chart's point stands for. Defaults
	// to ChartIntervalDefault.
	ChartInterval time.Duration
	// Logger receives errors. Defaults to slog.Default().
	Logger *slog.Logger
}

// Console is the operator console: an http.Handler for Prefix and below.
// Its charts count what the server reports to Observe. Safe for
// concurrent use.
type Console struct {
	cfg    Config
	mux    *http.ServeMux
	pages  map[string]*template.Template
	charts *charts
	reads  chan struct{} // ReadsMax turns
}

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"since":     stamp,
	"lines":     linesText,
	"agreement": agreement,
}

// New returns a Console.
func New(cfg Config) (*Console, error) {
	if cfg.Engine == nil || cfg.Authenticate == nil || cfg.AdminLive == nil {
		return nil, errors.New("console: Config.Engine, Authenticate and AdminLive are required")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = SessionTTLDefault
	}
	if cfg.ChartInterval <= 0 {
		cfg.ChartInterval = ChartIntervalDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if len(cfg.Secret) == 0 {
		cfg.Secret = randomSecret()
	}
	c := &Console{cfg: cfg, mux: http.NewServeMux(), pages: map[string]*template.Template{},
		charts: newCharts(cfg.ChartInterval), reads: make(chan struct{}, ReadsMax)}
	for _, page := range []string{"login", "overview", "shop", "key", "hold", "doctor", "error", "audit", "sales"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/charts.html", "templates/"+page+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", page, err)
		}
		c.pages[page] = t
	}
	static, _ := fs.Sub(staticFiles, "static")
	c.mux.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix+"/static/", staticHandler(http.FileServerFS(static))))
	c.mux.HandleFunc("GET "+Prefix+"/login", c.loginPage)
	c.mux.HandleFunc("POST "+Prefix+"/login", c.login)
	c.mux.HandleFunc("POST "+Prefix+"/logout", c.logout)
	c.mux.HandleFunc("GET "+Prefix+"/{$}", c.authed(c.overview))
	c.mux.HandleFunc("GET "+Prefix+"/open", c.authed(c.open))
	c.mux.HandleFunc("GET "+Prefix+"/shops/{shop}", c.authed(c.shop))
	c.mux.HandleFunc("GET "+Prefix+"/shops/{shop}/live", c.authedJSON(c.live))
	c.mux.HandleFunc("GET "+Prefix+"/shops/{shop}/keys/{item}/{location}", c.authed(c.key))
	c.mux.HandleFunc("GET "+Prefix+"/shops/{shop}/holds/{checkout}", c.authed(c.hold))
	c.mux.HandleFunc("GET "+Prefix+"/shops/{shop}/audit", c.authed(c.audit))
	c.mux.HandleFunc("GET "+Prefix+"/shops/{shop}/sales", c.authed(c.sales))
	c.mux.HandleFunc("GET "+Prefix+"/doctor", c.authed(c.doctor))
	c.mux.HandleFunc("GET "+Prefix+"/charts", c.authed(c.chartsFragment))
	c.mux.HandleFunc("GET "+Prefix+"/shops/{shop}/charts", c.authed(c.chartsFragment))
	c.mux.HandleFunc(Prefix+"/", c.authed(func(w http.ResponseWriter, r *http.Request, _ int64) error {
		return &pageError{status: http.StatusNotFound, msg: "no console page " + r.URL.Path}
	}))
	return c, nil
}

// Observe counts one answer of the API's reserve route for the charts:
// its shop (0 when the request named none it may reach), status and
// latency. Refusals (see Refusal) are left out. The server calls it for
// every reserve answer; it is cheap and safe for concurrent use.
func (c *Console) Observe(shop int64, status int, d time.Duration) {
	c.charts.observe(time.Now(), shop, status, d)
}

// TimeLayout is the one format of every time the console shows: UTC, to
// the millisecond, with its zone.
const TimeLayout = "2006-01-02 15:04:05.000 UTC"

// stamp is t as the console shows it (TimeLayout).
func stamp(t time.Time) string { return t.UTC().Format(TimeLayout) }

// agreement is a shadow shop's agreement rate as a percentage, "-" when
// nothing was compared (as holdfast shadow report says it).
func agreement(r shadow.ShopReport) string {
	if r.Compared == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*r.AgreementRate, 'f', 2, 64) + "%"
}

// ServeHTTP serves the console's pages, with headers that keep it from
// being framed, cached, or running any script but its own.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	c.mux.ServeHTTP(w, r)
}

func staticHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

// pageError is a request the console refuses, with its status.
type pageError struct {
	status int
	msg    string
}

func (e *pageError) Error() string { return e.msg }

func badInput(format string, args ...any) error {
	return &pageError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// status is the HTTP status of an error: the console's own, an engine's
// argument error (400), not found, or 503 for the rest (the database).
func (c *Console) status(r *http.Request, err error) (int, string) {
	var pe *pageError
	var ae *holdfast.ArgumentError
	switch {
	case errors.As(err, &pe):
		return pe.status, pe.msg
	case errors.As(err, &ae):
		return http.StatusBadRequest, ae.Error()
	case errors.Is(err, holdfast.ErrNotFound):
		return http.StatusNotFound, "not found (never reserved, or its outcome is past the retention window)"
	}
	c.cfg.Logger.Warn("console request failed", "path", r.URL.Path, "error", err.Error())
	return http.StatusServiceUnavailable, "the database did not answer: " + err.Error()
}

type handler func(w http.ResponseWriter, r *http.Request, keyID int64) error

// authed serves a page to a logged-in admin; anyone else is sent to the
// login page (a bearer admin key is accepted too, for scripts).
func (c *Console) authed(fn handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := c.principal(r)
		if err != nil {
			var pe *pageError
			if errors.As(err, &pe) && pe.status == http.StatusUnauthorized {
				http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
				return
			}
			c.render(w, r, http.StatusForbidden, "error", map[string]any{"Status": http.StatusForbidden, "Message": err.Error()})
			return
		}
		if err := c.turn(r, func() error { return fn(w, r, id) }); err != nil {
			st, msg := c.status(r, err)
			c.render(w, r, st, "error", map[string]any{"Status": st, "Message": msg, "Authed": true})
		}
	}
}

// authedJSON is authed for the JSON endpoints: errors are JSON too.
func (c *Console) authedJSON(fn handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := c.principal(r)
		if err == nil {
			err = c.turn(r, func() error { return fn(w, r, id) })
		}
		if err != nil {
			st, msg := c.status(r, err)
			writeJSON(w, st, map[string]any{"error": map[string]any{"status": st, "message": msg}})
		}
	}
}

// turn runs fn with one of the ReadsMax turns, waiting for one as long as
// the request lives.
func (c *Console) turn(r *http.Request, fn func() error) error {
	select {
	case c.reads <- struct{}{}:
	case <-r.Context().Done():
		return &pageError{status: http.StatusServiceUnavailable, msg: "gave up waiting for a turn to read the database"}
	}
	defer func() { <-c.reads }()
	return fn()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	data["Prefix"] = Prefix
	var b strings.Builder
	if err := c.pages[page].ExecuteTemplate(&b, "layout.html", data); err != nil {
		c.cfg.Logger.Error("console template", "page", page, "error", err.Error())
		http.Error(w, "console: template error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// pathID parses a positive integer path segment.
func pathID(r *http.Request, name string) (int64, error) {
	s := r.PathValue(name)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, badInput("%s must be a positive integer, not %q", name, s)
	}
	return v, nil
}

func linesText(ls []holdfast.Line) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%d × item %d @ %d", l.Quantity, l.ItemID, l.LocationID)
		if l.Preordered > 0 {
			parts[i] += fmt.Sprintf(" (%d pre-ordered)", l.Preordered)
		}
	}
	return strings.Join(parts, ", ")
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, _ int64) error {
	data := map[string]any{"Authed": true, "Title": "Shops", "Charts": c.chartsView(0)}
	if c.cfg.Shops != nil {
		shops, err := c.cfg.Shops(r.Context(), ShopsMax)
		if err != nil {
			return err
		}
		data["Shops"] = shops
	}
	if c.cfg.Shadow != nil {
		data["Modes"] = c.cfg.Shadow.ShopModes()
	}
	c.render(w, r, http.StatusOK, "overview", data)
	return nil
}

// open sends the overview's "open a shop" form to the shop's page.
func (c *Console) open(w http.ResponseWriter, r *http.Request, _ int64) error {
	s := r.URL.Query().Get("shop")
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		return badInput("shop must be a positive integer, not %q", s)
	}
	http.Redirect(w, r, fmt.Sprintf("%s/shops/%d", Prefix, v), http.StatusSeeOther)
	return nil
}

// liveKey and liveHold are the rows of a shop page's live tables.
type liveKey struct {
	ItemID        int64  `json:"item_id"`
	LocationID    int64  `json:"location_id"`
	Available     int    `json:"available"`
	Held          int    `json:"held"`
	Pooled        int    `json:"pooled"`
	Sellable      int    `json:"sellable"`
	OverCommitted bool   `json:"over_committed"`
	Strategy      string `json:"strategy"`
}

type liveHold struct {
	CheckoutID string `json:"checkout_id"`
	Status     string `json:"status"`
	Claimable  bool   `json:"claimable"`
	Lines      string `json:"lines"`
	CreatedAt  string `json:"created_at"`
	ExpiresAt  string `json:"expires_at"`
}

// liveEvent is a row of a shop page's recent events.
type liveEvent struct {
	Cursor  int64  `json:"cursor"`
	Type    string `json:"type"`
	At      string `json:"at"`
	Subject string `json:"subject"`
	Detail  string `json:"detail"`
}

// liveWebhook is a row of a shop page's webhook endpoints: how far its
// deliveries are behind the feed and why.
type liveWebhook struct {
	ID     int64  `json:"id"`
	URL    string `json:"url"`
	Cursor int64  `json:"cursor"`
	Behind int64  `json:"behind"`
	// LagSeconds is the age of the oldest event not yet delivered (by this
	// server's clock), 0 when none is; Lag says both as the page shows
	// them: "3 events, 4.2 s", or "-".
	LagSeconds  float64 `json:"lag_seconds"`
	Lag         string  `json:"lag"`
	Attempts    int     `json:"attempts"`
	NextAt      string  `json:"next_attempt_at,omitempty"`
	LastError   string  `json:"last_error,omitempty"`
	DeadLetters int     `json:"dead_letters"`
	State       string  `json:"state"`
}

type liveView struct {
	ShopID   int64         `json:"shop_id"`
	Keys     []liveKey     `json:"keys"`
	Holds    []liveHold    `json:"holds"`
	Events   []liveEvent   `json:"events,omitempty"`
	Webhooks []liveWebhook `json:"webhooks,omitempty"`
	// EventsOn and WebhooksOn say whether the server offers the panels.
	EventsOn   bool `json:"events_on"`
	WebhooksOn bool `json:"webhooks_on"`
}

func (c *Console) liveView(ctx context.Context, shop int64) (*liveView, error) {
	levels, err := c.cfg.Engine.Keys(ctx, holdfast.KeyQuery{ShopID: shop, Limit: LiveKeys})
	if err != nil {
		return nil, err
	}
	page, err := c.cfg.Engine.Holds(ctx, holdfast.HoldQuery{ShopID: shop, Limit: LiveHolds})
	if err != nil {
		return nil, err
	}
	v := &liveView{ShopID: shop, Keys: make([]liveKey, len(levels)), Holds: make([]liveHold, len(page.Holds))}
	for i, l := range levels {
		v.Keys[i] = liveKey{ItemID: l.ItemID, LocationID: l.LocationID, Available: l.Available, Held: l.Held,
			Pooled: l.Pooled, Sellable: l.Sellable, OverCommitted: l.OverCommitted, Strategy: string(l.Strategy)}
	}
	for i, h := range page.Holds {
		v.Holds[i] = toLiveHold(h)
	}
	var head int64
	if c.cfg.EventsHead != nil {
		v.EventsOn, v.Events = true, []liveEvent{}
		if head, err = c.cfg.EventsHead(ctx, shop); err != nil {
			return nil, err
		}
		if head > 0 {
			evs, err := c.cfg.Engine.Events(ctx, shop, max(0, head-LiveEvents), LiveEvents)
			if err != nil {
				return nil, err
			}
			for i := len(evs) - 1; i >= 0; i-- { // newest first
				v.Events = append(v.Events, toLiveEvent(evs[i]))
			}
		}
	}
	if c.cfg.Webhooks != nil {
		v.WebhooksOn, v.Webhooks = true, []liveWebhook{}
		eps, err := c.cfg.Webhooks(ctx, shop)
		if err != nil {
			return nil, err
		}
		oldest := map[int64]time.Time{} // by cursor: endpoints at one cursor share a read
		for _, ep := range eps {
			w := liveWebhook{ID: ep.ID, URL: ep.URL, Cursor: ep.Cursor, Behind: max(0, head-ep.Cursor),
				Attempts: ep.Attempts, LastError: ep.LastError, DeadLetters: ep.DeadLetters, State: "up to date", Lag: "-"}
			if w.Behind > 0 {
				at, ok := oldest[ep.Cursor]
				if !ok {
					evs, err := c.cfg.Engine.Events(ctx, shop, ep.Cursor, 1)
					if err != nil {
						return nil, err
					}
					if len(evs) > 0 {
						at = evs[0].At
					}
					oldest[ep.Cursor] = at
				}
				w.Lag = fmt.Sprintf("%d events", w.Behind)
				if w.Behind == 1 {
					w.Lag = "1 event"
				}
				if !at.IsZero() {
					w.LagSeconds = max(0, time.Since(at).Seconds())
					w.Lag += ", " + seconds(w.LagSeconds)
				}
			}
			if ep.NextAt != nil {
				w.NextAt = stamp(*ep.NextAt)
			}
			switch {
			case ep.Attempts > 0:
				w.State = fmt.Sprintf("retrying (attempt %d)", ep.Attempts)
			case w.Behind > 0:
				w.State = fmt.Sprintf("%d behind", w.Behind)
			}
			v.Webhooks = append(v.Webhooks, w)
		}
	}
	return v, nil
}

// seconds says a lag: to a tenth of a second under 100 s, whole seconds
// above.
func seconds(s float64) string {
	if s < 100 {
		return strconv.FormatFloat(s, 'f', 1, 64) + " s"
	}
	return strconv.FormatFloat(s, 'f', 0, 64) + " s"
}

func toLiveEvent(e holdfast.Event) liveEvent {
	le := liveEvent{Cursor: e.Cursor, Type: string(e.Type), At: stamp(e.At)}
	if e.CheckoutID != nil {
		le.Subject = "checkout " + e.CheckoutID.String()
		le.Detail = linesText(e.Lines)
	} else {
		le.Subject = fmt.Sprintf("item %d @ %d", e.ItemID, e.LocationID)
		var parts []string
		if e.Delta != nil {
			parts = append(parts, fmt.Sprintf("%+d", *e.Delta))
		}
		if e.Available != nil {
			parts = append(parts, fmt.Sprintf("available %d", *e.Available))
		}
		if e.Reason != "" {
			parts = append(parts, e.Reason)
		}
		if e.Reference != "" {
			parts = append(parts, e.Reference)
		}
		le.Detail = strings.Join(parts, " · ")
	}
	return le
}

func toLiveHold(h holdfast.Hold) liveHold {
	return liveHold{CheckoutID: h.CheckoutID.String(), Status: string(h.Status), Claimable: h.Claimable,
		Lines: linesText(h.Lines), CreatedAt: stamp(h.CreatedAt),
		ExpiresAt: stamp(h.ExpiresAt)}
}

func (c *Console) shop(w http.ResponseWriter, r *http.Request, _ int64) error {
	shop, err := pathID(r, "shop")
	if err != nil {
		return err
	}
	v, err := c.liveView(r.Context(), shop)
	if err != nil {
		return err
	}
	data := map[string]any{"Authed": true, "Title": fmt.Sprintf("Shop %d", shop), "Shop": shop, "Live": v, "Charts": c.chartsView(shop)}
	if c.cfg.Shadow != nil {
		data["ShadowOn"] = true
		if m, ok := c.cfg.Shadow.Mode(shop); ok {
			data["Mode"] = string(m)
		}
		reps, err := c.cfg.Shadow.Report(r.Context())
		if err != nil {
			return err
		}
		for _, rep := range reps {
			if rep.ShopID == shop {
				data["Shadow"] = rep
			}
		}
	}
	c.render(w, r, http.StatusOK, "shop", data)
	return nil
}

func (c *Console) live(w http.ResponseWriter, r *http.Request, _ int64) error {
	shop, err := pathID(r, "shop")
	if err != nil {
		return err
	}
	if len(r.URL.RawQuery) > 0 {
		return badInput("the live view takes no query parameters")
	}
	v, err := c.liveView(r.Context(), shop)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (c *Console) key(w http.ResponseWriter, r *http.Request, _ int64) error {
	k := holdfast.Key{}
	var err error
	if k.ShopID, err = pathID(r, "shop"); err != nil {
		return err
	}
	if k.ItemID, err = pathID(r, "item"); err != nil {
		return err
	}
	if k.LocationID, err = pathID(r, "location"); err != nil {
		return err
	}
	q := r.URL.Query()
	for name := range q {
		if name != "holds" && name != "ledger" {
			return badInput("unknown query parameter %q (allowed: holds, ledger)", name)
		}
	}
	ctx := r.Context()
	lvl, err := c.cfg.Engine.Level(ctx, k)
	if err != nil {
		return err
	}
	holds, err := c.cfg.Engine.Holds(ctx, holdfast.HoldQuery{ShopID: k.ShopID, ItemID: k.ItemID, LocationID: k.LocationID, After: q.Get("holds"), Limit: PageSize})
	if err != nil {
		return err
	}
	ledger, err := c.cfg.Engine.Ledger(ctx, holdfast.LedgerQuery{Key: k, After: q.Get("ledger"), Limit: PageSize})
	if err != nil {
		return err
	}
	pre, err := c.preorderView(ctx, k)
	if err != nil {
		return err
	}
	drop, err := c.dropView(ctx, k)
	if err != nil {
		return err
	}
	hv := make([]liveHold, len(holds.Holds))
	for i, h := range holds.Holds {
		hv[i] = toLiveHold(h)
	}
	c.render(w, r, http.StatusOK, "key", map[string]any{
		"Authed": true, "Title": fmt.Sprintf("Shop %d: item %d @ location %d", k.ShopID, k.ItemID, k.LocationID),
		"Key": k, "Level": lvl, "Holds": hv, "HoldsNext": holds.Next, "Ledger": ledger.Entries, "LedgerNext": ledger.Next,
		"LedgerCursor": q.Get("ledger"), "HoldsCursor": q.Get("holds"), "Preorder": pre, "Drop": drop,
		"EntrantsShown": DropEntrantsShown,
	})
	return nil
}

func (c *Console) hold(w http.ResponseWriter, r *http.Request, _ int64) error {
	shop, err := pathID(r, "shop")
	if err != nil {
		return err
	}
	s := r.PathValue("checkout")
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 || id == uuid.Nil {
		return badInput("checkout must be a UUID such as 6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42, not %q", s)
	}
	h, err := c.cfg.Engine.Hold(r.Context(), shop, id)
	if err != nil {
		return err
	}
	c.render(w, r, http.StatusOK, "hold", map[string]any{"Authed": true, "Title": "Checkout " + id.String(), "Shop": shop, "Hold": h, "View": toLiveHold(*h)})
	return nil
}

func (c *Console) doctor(w http.ResponseWriter, r *http.Request, _ int64) error {
	data := map[string]any{"Authed": true, "Title": "Doctor"}
	if c.cfg.Doctor != nil {
		ctx, cancel := context.WithTimeout(r.Context(), DoctorTimeout)
		defer cancel()
		rep, err := c.cfg.Doctor(ctx)
		if err != nil {
			return err
		}
		data["Report"] = rep
		data["Worst"] = string(rep.Worst())
	}
	c.render(w, r, http.StatusOK, "doctor", data)
	return nil
}

// chartsView is the charts of a shop (0: server-wide) as of now.
func (c *Console) chartsView(shop int64) chartsView {
	v := c.charts.view(time.Now(), shop)
	v.Src = Prefix + "/charts"
	if shop > 0 {
		v.Src = fmt.Sprintf("%s/shops/%d/charts", Prefix, shop)
	}
	return v
}

// chartsFragment is the charts alone (server-wide, or a shop's), for the
// pages' script to refresh.
func (c *Console) chartsFragment(w http.ResponseWriter, r *http.Request, _ int64) error {
	var shop int64
	if r.PathValue("shop") != "" {
		var err error
		if shop, err = pathID(r, "shop"); err != nil {
			return err
		}
	}
	var b strings.Builder
	if err := c.pages["overview"].ExecuteTemplate(&b, "charts", c.chartsView(shop)); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(b.String()))
	return nil
}

// audit is a shop's audit log, newest first, a page of PageSize, filtered
// by action (audit.go in package holdfast).
func (c *Console) audit(w http.ResponseWriter, r *http.Request, _ int64) error {
	shop, err := pathID(r, "shop")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	for name := range q {
		if name != "cursor" && name != "action" {
			return badInput("unknown query parameter %q (allowed: cursor, action)", name)
		}
	}
	page, err := c.cfg.Engine.Audit(r.Context(), holdfast.AuditQuery{ShopID: shop, Action: q.Get("action"), After: q.Get("cursor"), Limit: PageSize})
	if err != nil {
		return err
	}
	c.render(w, r, http.StatusOK, "audit", map[string]any{"Authed": true, "Title": fmt.Sprintf("Shop %d: audit log", shop),
		"Shop": shop, "Action": q.Get("action"), "Entries": page.Entries, "Next": page.Next})
	return nil
}

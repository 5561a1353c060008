package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/holdfast/holdfast"
)

// Defaults of the delivery pool.
const (
	WorkersDefault    = 4
	TimeoutDefault    = 10 * time.Second
	ResponseMax       = 64 << 10
	BackoffMinDefault = time.Second
	BackoffMaxDefault = 5 * time.Minute
	HorizonDefault    = 24 * time.Hour
	PollDefault       = time.Second
	// SliceDefault is how long one lease of an endpoint starts new
	// requests before the endpoint goes to the back of the line.
	SliceDefault = 5 * time.Second
	// BatchMax bounds the events one lease of an endpoint delivers.
	BatchMax = 100
	// leaseExtra is how much longer than its work a lease lasts: a
	// deliverer that dies leaves its endpoints to another after it.
	leaseExtra = time.Minute
)

// Events is what the deliverer reads: holdfast.Engine.Events.
type Events interface {
	Events(ctx context.Context, shopID int64, after int64, limit int) ([]holdfast.Event, error)
}

// Config configures a Deliverer. The zero value of each field but Store
// and Events means its default.
type Config struct {
	// Store is the registry's store (pgstore.Webhooks,
	// mysqlstore.Webhooks). Required.
	Store Store
	// Events is the feed, the engine. Required.
	Events Events
	// Workers bounds the endpoints delivered to at once (the pool). A slow
	// endpoint holds one worker, never a checkout's connection. Defaults
	// to 4.
	Workers int
	// Timeout bounds one delivery request. Defaults to 10s.
	Timeout time.Duration
	// BackoffMin and BackoffMax bound the wait between attempts: BackoffMin
	// doubling per attempt. Default to 1s and 5m.
	BackoffMin, BackoffMax time.Duration
	// Horizon is how long an event is retried after its first failure
	// before it becomes a dead letter. Defaults to 24h.
	Horizon time.Duration
	// Poll is how often the deliverer looks for due endpoints and new
	// events. Defaults to 1s.
	Poll time.Duration
	// Slice bounds how long one lease of an endpoint starts new requests
	// (the last one may take Timeout more): then the endpoint goes to the
	// back of the line of due endpoints. Endpoints are leased oldest due
	// first, so an endpoint with events waits for a worker at most
	// ceil(D/Workers) × (Slice + Timeout) + Poll, D the endpoints due
	// before it (at most every registered endpoint, EndpointsPerShopMax
	// per shop). Defaults to 5s; at most Timeout + 30s (the lease must
	// outlast the last request).
	Slice time.Duration
	// Client sends the requests. Defaults to one with Timeout that follows
	// no redirects (only the registered URL is ever called).
	Client *http.Client
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Options are the destinations allowed (every connection is checked
	// at connect time; a Client given above must do its own checks) and
	// the key the endpoints' secrets are encrypted with.
	Options
}

// Deliverer is the delivery pool of holdfast serve: Start, Stop (the
// httpapi.Worker shape). Several, in several processes, share the work:
// each endpoint is leased to one at a time.
type Deliverer struct {
	cfg    Config
	st     Store
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewDeliverer returns a Deliverer; it does nothing until Start.
func NewDeliverer(cfg Config) (*Deliverer, error) {
	if cfg.Store == nil || cfg.Events == nil {
		return nil, errors.New("webhook: Config.Store and Config.Events are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = WorkersDefault
	}
	def(&cfg.Timeout, TimeoutDefault)
	def(&cfg.BackoffMin, BackoffMinDefault)
	def(&cfg.BackoffMax, BackoffMaxDefault)
	def(&cfg.Horizon, HorizonDefault)
	def(&cfg.Poll, PollDefault)
	def(&cfg.Slice, SliceDefault)
	cfg.Slice = min(cfg.Slice, cfg.Timeout+leaseExtra/2)
	if cfg.Client == nil {
		dialer := &net.Dialer{Timeout: cfg.Timeout, Control: dialControl(cfg.AllowNetworks)}
		cfg.Client = &http.Client{
			Timeout: cfg.Timeout,
			// No proxy: the destination checked must be the one called.
			Transport: &http.Transport{
				DialContext:         dialer.DialContext,
				MaxIdleConnsPerHost: 2,
				IdleConnTimeout:     90 * time.Second,
				TLSHandshakeTimeout: cfg.Timeout,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SecretKey != nil {
		if _, err := secretAEAD(cfg.SecretKey); err != nil {
			return nil, err
		}
	}
	return &Deliverer{cfg: cfg, st: cfg.Store}, nil
}

// Start starts the pool; it does not block.
func (d *Deliverer) Start(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancel != nil {
		return
	}
	ctx, d.cancel = context.WithCancel(context.WithoutCancel(ctx))
	d.done = make(chan struct{})
	go d.loop(ctx, d.done)
}

// Stop stops the pool and waits for deliveries in flight, bounded by ctx.
// Idempotent; safe before Start. An endpoint whose delivery was cut keeps
// its cursor: the event is delivered again (at least once).
func (d *Deliverer) Stop(ctx context.Context) error {
	d.mu.Lock()
	cancel, done := d.cancel, d.done
	d.cancel, d.done = nil, nil
	d.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Deliverer) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	var wg sync.WaitGroup
	defer wg.Wait()
	free := make(chan struct{}, d.cfg.Workers)
	for range d.cfg.Workers {
		free <- struct{}{}
	}
	kick := make(chan struct{}, 1)
	t := time.NewTicker(d.cfg.Poll)
	defer t.Stop()
	// backlog: the last lease took as many endpoints as there were free
	// workers, so more may be due: a worker that frees leases at once
	// rather than at the next tick. Without a backlog only an endpoint
	// with more to send does (never one whose attempt failed: no busy
	// loop on an error).
	var backlog atomic.Bool
	for {
		n := len(free)
		if n > 0 {
			eps, err := d.lease(ctx, n)
			if err != nil && ctx.Err() == nil {
				d.cfg.Logger.Warn("webhooks: leasing endpoints", "err", err.Error())
			}
			backlog.Store(len(eps) == n)
			for _, ep := range eps {
				<-free
				wg.Add(1)
				go func(ep Leased) {
					defer wg.Done()
					more := d.deliver(ctx, ep)
					free <- struct{}{}
					if more || backlog.Load() {
						select {
						case kick <- struct{}{}:
						default:
						}
					}
				}(ep)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
	}
}

// sequencer is the engine's SequenceEvents (postgres.Client,
// mysql.Client): an endpoint is due when its shop's sequenced cursor is
// past the endpoint's, so the deliverer sequences before it leases.
type sequencer interface {
	SequenceEvents(ctx context.Context) (int, error)
}

func (d *Deliverer) lease(ctx context.Context, n int) ([]Leased, error) {
	if sq, ok := d.cfg.Events.(sequencer); ok {
		if _, err := sq.SequenceEvents(ctx); err != nil {
			return nil, fmt.Errorf("sequencing events: %w", err)
		}
	}
	return d.st.Lease(ctx, 2*d.cfg.Timeout+leaseExtra, n)
}

// deliver sends ep's next events in cursor order until one fails, the
// batch ends or the slice (Config.Slice) is over, then gives the lease
// back (the endpoint goes to the back of the line). It reports whether
// more may be waiting (a full batch or a cut one).
func (d *Deliverer) deliver(ctx context.Context, ep Leased) bool {
	start := time.Now()
	// The bookkeeping outlives a Stop in the middle of a request: a
	// delivery that was answered is recorded.
	bg := context.WithoutCancel(ctx)
	defer func() {
		c, cancel := context.WithTimeout(bg, 5*time.Second)
		defer cancel()
		_ = d.st.Unlease(c, ep.Shop, ep.ID, ep.Token)
	}()
	secret, err := openSecret(d.cfg.SecretKey, ep.Shop, ep.Secret)
	if err != nil {
		// Visible where the endpoint's state is read (last_error: webhooks
		// list, the API) and retried with backoff, not every poll; its
		// events are not dead-lettered: they are deliverable once this
		// deliverer has the key the secret was sealed with.
		ep.Attempts++
		wait := d.cfg.BackoffMin << min(ep.Attempts-1, 30)
		if wait > d.cfg.BackoffMax || wait <= 0 {
			wait = d.cfg.BackoffMax
		}
		msg := "the endpoint's secret is sealed with another webhook key than this server's (--webhook-key, --webhook-key-file): give it the key the secret was registered with, or register the endpoint again"
		if errors.Is(err, ErrSecretKey) && d.cfg.SecretKey == nil {
			msg = "the endpoint's secret is sealed with a webhook key and this server has none: give it the key (--webhook-key, --webhook-key-file)"
		}
		c, cancel := context.WithTimeout(bg, 5*time.Second)
		_, ferr := d.st.Failed(c, ep.Shop, ep.ID, ep.Token, ep.Attempts, msg, wait, d.cfg.Horizon)
		cancel()
		if (ferr != nil && !errors.Is(ferr, ErrLeaseLost)) || (ferr == nil && ep.Attempts == 1) {
			d.cfg.Logger.Warn("webhooks: endpoint's secret", "endpoint", ep.ID, "shop", ep.Shop, "err", err.Error(), "retry_in", wait.String())
		}
		return false
	}
	ep.Secret = secret
	evs, err := d.cfg.Events.Events(ctx, ep.Shop, ep.Cursor, BatchMax)
	var expired *holdfast.CursorExpiredError
	if errors.As(err, &expired) {
		// Events this endpoint had not received were purged (kept past
		// the retention for it, up to EventRetentionMax): never skip them
		// silently, record the gap as a dead letter and move past it.
		c, cancel := context.WithTimeout(bg, 5*time.Second)
		defer cancel()
		body, _ := json.Marshal(purgedGap{ShopID: ep.Shop, From: expired.After + 1, To: expired.Oldest})
		msg := fmt.Sprintf("events %d..%d were purged (past the event retention) before delivery", expired.After+1, expired.Oldest)
		if err := d.st.DeadLetter(c, ep.ID, ep.Shop, ep.Token, expired.Oldest, body, ep.Attempts, msg); err != nil {
			d.leaseLost(ep, err)
			if errors.Is(err, ErrLeaseLost) {
				return false
			}
			d.cfg.Logger.Warn("webhooks: recording purged events", "endpoint", ep.ID, "shop", ep.Shop, "err", err.Error())
			return false
		}
		d.cfg.Logger.Warn("webhooks: dead letter", "endpoint", ep.ID, "shop", ep.Shop, "cursor", expired.Oldest, "err", msg)
		return true
	}
	if err != nil {
		if ctx.Err() == nil {
			d.cfg.Logger.Warn("webhooks: reading events", "shop", ep.Shop, "err", err.Error())
		}
		return false
	}
	for _, ev := range evs {
		if time.Since(start) > d.cfg.Slice {
			return true // others' turn; Slice ≤ Timeout + leaseExtra/2, so the lease outlasts the last request
		}
		body, err := json.Marshal(ev)
		if err != nil {
			return false
		}
		sendErr := d.send(ctx, ep, ev.Cursor, body)
		if ctx.Err() != nil {
			return false // stopping: the event is sent again after a restart
		}
		c, cancel := context.WithTimeout(bg, 5*time.Second)
		if sendErr == nil {
			err = d.st.Delivered(c, ep.Shop, ep.ID, ep.Token, ev.Cursor)
			cancel()
			if err != nil {
				d.leaseLost(ep, err)
				return false
			}
			ep.Attempts = 0
			continue
		}
		ep.Attempts++
		wait := d.cfg.BackoffMin << min(ep.Attempts-1, 30)
		if wait > d.cfg.BackoffMax || wait <= 0 {
			wait = d.cfg.BackoffMax
		}
		msg := deliveryError(sendErr)
		if len(msg) > 500 {
			msg = msg[:500]
		}
		past, err := d.st.Failed(c, ep.Shop, ep.ID, ep.Token, ep.Attempts, msg, wait, d.cfg.Horizon)
		if err == nil && past {
			err = d.st.DeadLetter(c, ep.ID, ep.Shop, ep.Token, ev.Cursor, body, ep.Attempts, msg)
			if err == nil {
				d.cfg.Logger.Warn("webhooks: dead letter", "endpoint", ep.ID, "shop", ep.Shop, "cursor", ev.Cursor, "attempts", ep.Attempts, "err", msg)
			}
		}
		cancel()
		d.leaseLost(ep, err)
		return false
	}
	return len(evs) == BatchMax
}

// leaseLost logs a write refused because ep's lease ran out and another
// deliverer holds the endpoint now (it carries on from the stored cursor).
func (d *Deliverer) leaseLost(ep Leased, err error) {
	if errors.Is(err, ErrLeaseLost) {
		d.cfg.Logger.Warn("webhooks: lease lost (ran out while delivering; another deliverer has the endpoint)", "endpoint", ep.ID, "shop", ep.Shop)
	}
}

// purgedGap is the event of a dead letter for events purged before the
// endpoint received them.
type purgedGap struct {
	ShopID int64 `json:"shop_id"`
	From   int64 `json:"purged_from"`
	To     int64 `json:"purged_to"`
}

// send POSTs one event; nil only for a 2xx answer.
func (d *Deliverer) send(ctx context.Context, ep Leased, cursor int64, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "holdfast-webhooks")
	req.Header.Set(SignatureHeader, Sign(ep.Secret, time.Now(), body))
	req.Header.Set(CursorHeader, strconv.FormatInt(cursor, 10))
	req.Header.Set(EndpointHeader, strconv.FormatInt(ep.ID, 10))
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// Read a bounded part of the answer, so the connection can be reused
	// and a huge answer costs nothing.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, ResponseMax))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("answered %d", resp.StatusCode)
	}
	return nil
}

// Package redis is the legacy Redis hold store, exactly as the legacy ran it,
// as a legacy.Store: a counter per (shop, item, location) under a
// configurable key template, DECRBY to reserve (given back with INCRBY when it
// went negative), INCRBY to release, each checkout's hold tracked in a hash
// with its TTL in a sorted set whose sweep (ExpireOnce) gives expired holds'
// units back, and a claim in two steps — deduct the SQL ledger, then clean
// Redis — that cannot be atomic across the two systems.
//
// The SQL ledger is the adapter's own small table (legacy_redis_ledger, made
// by Setup), standing for the team's existing inventory ledger: it is not
// holdfast's, so running both systems side by side never deducts one ledger
// twice.
//
// The scripts use keys they compute from the hold record, so the store needs
// a single Redis server (or a cluster with every key of a shop in one hash
// slot through the key template's {hash tag}).
package redis

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/legacy"
)

//go:embed sql/*.sql lua/*.lua
var files embed.FS

func file(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("legacy/redis: missing " + name)
	}
	return string(b)
}

var (
	reserveScript = goredis.NewScript(file("lua/reserve.lua"))
	endScript     = goredis.NewScript(file("lua/end.lua"))
	claimScript   = goredis.NewScript(file("lua/claim.lua"))
	extendScript  = goredis.NewScript(file("lua/extend.lua"))
)

// Bounds and defaults.
const (
	// KeyTemplateDefault is the counter key of a (shop, item, location).
	KeyTemplateDefault = "holdfast:legacy:stock:{shop}:{item}:{location}"
	// PrefixDefault prefixes the hold hashes and the expiry set.
	PrefixDefault = "holdfast:legacy:"
	// RetentionDefault is how long an ended hold's record answers retries.
	RetentionDefault = 24 * time.Hour
	// ExpireBatchDefault bounds the holds one ExpireOnce batch ends.
	ExpireBatchDefault = 500
	// LinesPerCartMax bounds a cart's lines (the script's KEYS).
	LinesPerCartMax = holdfast.LinesPerCartMaxDefault
)

// Config configures a Store. The zero value of every field means its
// default.
type Config struct {
	// KeyTemplate is the counter key; {shop}, {item} and {location} are
	// replaced by the key's ids. Defaults to KeyTemplateDefault.
	KeyTemplate string
	// Prefix prefixes hold hashes (Prefix+"hold:{shop}:{checkout}") and the
	// expiry sorted set (Prefix+"expiry"). Defaults to PrefixDefault.
	Prefix string
	// HoldLifetimeMax is a hold's deadline after creation (Extend's cap).
	// Defaults to holdfast.HoldLifetimeMaxDefault.
	HoldLifetimeMax time.Duration
	// Retention defaults to RetentionDefault.
	Retention time.Duration
	// ExpireBatch defaults to ExpireBatchDefault.
	ExpireBatch int
	// Now replaces the clock, for tests and the demo. Defaults to time.Now.
	Now func() time.Time
	// ClaimOrder is the order of the claim's two steps. Defaults to
	// ClaimLedgerFirst.
	ClaimOrder ClaimOrder
	// BetweenSteps, when set, runs between the claim's two steps. A non-nil
	// error stops the claim there, as a crash of the legacy process would,
	// and is returned. For crash injection in tests and the demo.
	BetweenSteps func(shopID int64, checkoutID uuid.UUID) error
}

// ClaimOrder is the order of the legacy claim's two steps; neither is safe.
type ClaimOrder int

const (
	// ClaimLedgerFirst deducts the SQL ledger, then cleans Redis. A crash
	// between leaves the sold units reserved in Redis (deducted, still
	// reserved); when the hold expires they go back on sale and sell again.
	ClaimLedgerFirst ClaimOrder = iota
	// ClaimRedisFirst cleans Redis, then deducts the ledger. A crash between
	// leaves the units sold but never deducted: the ledger overstates the
	// stock, and a retry answers "claimed" without deducting.
	ClaimRedisFirst
)

// Store is the Redis legacy store. It is safe for concurrent use.
type Store struct {
	rdb  goredis.UniversalClient
	pool *pgxpool.Pool
	cfg  Config
}

var _ legacy.Store = (*Store)(nil)

// New returns a Store on a Redis client and the SQL ledger's pool. Call
// Setup once to create the ledger tables.
func New(rdb goredis.UniversalClient, pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if cfg.KeyTemplate == "" {
		cfg.KeyTemplate = KeyTemplateDefault
	}
	for _, p := range []string{"{shop}", "{item}", "{location}"} {
		if !strings.Contains(cfg.KeyTemplate, p) {
			return nil, &holdfast.ArgumentError{Field: "KeyTemplate", Reason: "must contain " + p}
		}
	}
	if cfg.Prefix == "" {
		cfg.Prefix = PrefixDefault
	}
	if cfg.HoldLifetimeMax <= 0 {
		cfg.HoldLifetimeMax = holdfast.HoldLifetimeMaxDefault
	}
	if cfg.Retention <= 0 {
		cfg.Retention = RetentionDefault
	}
	if cfg.ExpireBatch <= 0 {
		cfg.ExpireBatch = ExpireBatchDefault
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{rdb: rdb, pool: pool, cfg: cfg}, nil
}

// Setup creates the SQL ledger tables when missing.
func (s *Store) Setup(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, file("sql/schema.sql"))
	return err
}

// Redis is the store's Redis client.
func (s *Store) Redis() goredis.UniversalClient { return s.rdb }

// CounterKey is the Redis counter of k under the key template.
func (s *Store) CounterKey(k holdfast.Key) string {
	return strings.NewReplacer(
		"{shop}", strconv.FormatInt(k.ShopID, 10),
		"{item}", strconv.FormatInt(k.ItemID, 10),
		"{location}", strconv.FormatInt(k.LocationID, 10),
	).Replace(s.cfg.KeyTemplate)
}

func (s *Store) holdKey(shop int64, checkout uuid.UUID) string {
	return s.cfg.Prefix + "hold:" + strconv.FormatInt(shop, 10) + ":" + checkout.String()
}

func (s *Store) expiryKey() string { return s.cfg.Prefix + "expiry" }

// Reserve implements legacy.Store: one script DECRBYs every line's counter,
// giving all back when one goes negative.
func (s *Store) Reserve(ctx context.Context, p holdfast.ReserveParams) (*holdfast.Hold, error) {
	if err := validCheckout(p.ShopID, p.CheckoutID); err != nil {
		return nil, err
	}
	lines, err := normLines(p.Lines)
	if err != nil {
		return nil, err
	}
	if p.TTL < holdfast.HoldTTLMin || p.TTL > s.cfg.HoldLifetimeMax {
		return nil, &holdfast.ArgumentError{Field: "ttl", Reason: fmt.Sprintf("must be between %v and %v", holdfast.HoldTTLMin, s.cfg.HoldLifetimeMax)}
	}
	now := s.cfg.Now()
	keys := []string{s.holdKey(p.ShopID, p.CheckoutID), s.expiryKey()}
	args := []any{ms(now), ms(now.Add(p.TTL)), ms(now.Add(s.cfg.HoldLifetimeMax)), encodeLines(lines)}
	for _, l := range lines {
		keys = append(keys, s.CounterKey(holdfast.Key{ShopID: p.ShopID, ItemID: l.ItemID, LocationID: l.LocationID}))
		args = append(args, l.Quantity)
	}
	res, err := reserveScript.Run(ctx, s.rdb, keys, args...).StringSlice()
	if err != nil {
		return nil, unavailable(err)
	}
	switch res[0] {
	case "short":
		short := &holdfast.InsufficientStockError{}
		for i := 1; i+1 < len(res); i += 2 {
			j, _ := strconv.Atoi(res[i])
			have, _ := strconv.Atoi(res[i+1])
			l := lines[j-1]
			short.Lines = append(short.Lines, holdfast.Shortfall{ItemID: l.ItemID, LocationID: l.LocationID, Requested: l.Quantity, Sellable: max(have, 0)})
		}
		return nil, short
	case "exists":
		h, err := decodeHold(p.ShopID, p.CheckoutID, res[1:])
		if err != nil {
			return nil, err
		}
		switch h.Status {
		case holdfast.StatusClaimed:
			return nil, holdfast.ErrHoldClaimed
		case holdfast.StatusReleased:
			return nil, holdfast.ErrHoldReleased
		case holdfast.StatusExpired:
			return nil, holdfast.ErrHoldExpired
		}
		if !slices.Equal(h.Lines, lines) {
			return nil, holdfast.ErrIdempotencyConflict
		}
		h.Replayed = true
		return h, nil
	}
	return decodeHold(p.ShopID, p.CheckoutID, res[1:])
}

// Claim implements legacy.Store in the legacy's two steps, in
// Config.ClaimOrder: the SQL ledger deduction commits, and Redis is cleaned
// (the hold record ends so expiry will not give its units back). Nothing
// makes the two atomic: see ClaimOrder for what a crash between them
// (Config.BetweenSteps) leaves.
func (s *Store) Claim(ctx context.Context, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	h, err := s.Hold(ctx, shop, checkout)
	if err != nil {
		return nil, err
	}
	switch h.Status {
	case holdfast.StatusClaimed:
		h.Replayed = true
		return h, nil
	case holdfast.StatusReleased:
		return nil, holdfast.ErrHoldReleased
	case holdfast.StatusExpired:
		return nil, holdfast.ErrHoldExpired
	}
	var out *holdfast.Hold
	steps := []func() error{
		func() error { return s.deductLedger(ctx, h) },
		func() error {
			res, err := claimScript.Run(ctx, s.rdb, []string{s.holdKey(shop, checkout), s.expiryKey()},
				ms(s.cfg.Now()), s.cfg.Retention.Milliseconds()).StringSlice()
			if err != nil {
				return unavailable(err)
			}
			out, err = s.ended(shop, checkout, res, holdfast.StatusClaimed)
			return err
		},
	}
	if s.cfg.ClaimOrder == ClaimRedisFirst {
		steps[0], steps[1] = steps[1], steps[0]
	}
	if err := steps[0](); err != nil {
		return nil, err
	}
	if s.cfg.BetweenSteps != nil {
		if err := s.cfg.BetweenSteps(shop, checkout); err != nil {
			return nil, err
		}
	}
	if err := steps[1](); err != nil {
		return nil, err
	}
	return out, nil
}

// deductLedger is the claim's SQL step: once per checkout.
func (s *Store) deductLedger(ctx context.Context, h *holdfast.Hold) error {
	items := make([]int64, len(h.Lines))
	locs := make([]int64, len(h.Lines))
	qtys := make([]int64, len(h.Lines))
	for i, l := range h.Lines {
		items[i], locs[i], qtys[i] = l.ItemID, l.LocationID, int64(l.Quantity)
	}
	if _, err := s.pool.Exec(ctx, file("sql/claim_ledger.sql"), h.ShopID, h.CheckoutID, items, locs, qtys); err != nil {
		return fmt.Errorf("%w: legacy ledger: %v", holdfast.ErrUnavailable, err)
	}
	return nil
}

// Release implements legacy.Store: INCRBY gives every line back.
func (s *Store) Release(ctx context.Context, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	h, err := s.Hold(ctx, shop, checkout)
	if err != nil {
		return nil, err
	}
	switch h.Status {
	case holdfast.StatusClaimed:
		return nil, holdfast.ErrHoldClaimed
	case holdfast.StatusReleased, holdfast.StatusExpired:
		h.Replayed = true
		return h, nil
	}
	res, err := s.end(ctx, h, holdfast.StatusReleased)
	if err != nil {
		return nil, err
	}
	return s.ended(shop, checkout, res, holdfast.StatusReleased)
}

func (s *Store) end(ctx context.Context, h *holdfast.Hold, to holdfast.Status) ([]string, error) {
	keys := []string{s.holdKey(h.ShopID, h.CheckoutID), s.expiryKey()}
	args := []any{ms(s.cfg.Now()), s.cfg.Retention.Milliseconds(), string(to), encodeLines(h.Lines)}
	for _, l := range h.Lines {
		keys = append(keys, s.CounterKey(holdfast.Key{ShopID: h.ShopID, ItemID: l.ItemID, LocationID: l.LocationID}))
		args = append(args, l.Quantity)
	}
	res, err := endScript.Run(ctx, s.rdb, keys, args...).StringSlice()
	if err != nil {
		return nil, unavailable(err)
	}
	return res, nil
}

// ended maps a script's answer about a hold that was to become to.
func (s *Store) ended(shop int64, checkout uuid.UUID, res []string, to holdfast.Status) (*holdfast.Hold, error) {
	switch res[0] {
	case "missing":
		return nil, holdfast.ErrNotFound
	case "ended":
		return decodeHold(shop, checkout, res[1:])
	}
	h, err := decodeHold(shop, checkout, res[1:])
	if err != nil {
		return nil, err
	}
	switch {
	case h.Status == to:
		h.Replayed = true
		return h, nil
	case h.Status == holdfast.StatusClaimed:
		return nil, holdfast.ErrHoldClaimed
	case h.Status == holdfast.StatusReleased && to == holdfast.StatusClaimed:
		return nil, holdfast.ErrHoldReleased
	case h.Status == holdfast.StatusExpired && to == holdfast.StatusClaimed:
		return nil, holdfast.ErrHoldExpired
	}
	h.Replayed = true
	return h, nil
}

// Extend implements legacy.Store.
func (s *Store) Extend(ctx context.Context, shop int64, checkout uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	if err := validCheckout(shop, checkout); err != nil {
		return nil, err
	}
	if ttl < holdfast.HoldTTLMin || ttl > s.cfg.HoldLifetimeMax {
		return nil, &holdfast.ArgumentError{Field: "ttl", Reason: fmt.Sprintf("must be between %v and %v", holdfast.HoldTTLMin, s.cfg.HoldLifetimeMax)}
	}
	res, err := extendScript.Run(ctx, s.rdb, []string{s.holdKey(shop, checkout), s.expiryKey()}, ms(s.cfg.Now()), ttl.Milliseconds()).StringSlice()
	if err != nil {
		return nil, unavailable(err)
	}
	switch res[0] {
	case "missing":
		return nil, holdfast.ErrNotFound
	case "lifetime":
		return nil, holdfast.ErrLifetimeExceeded
	case "exists":
		h, err := decodeHold(shop, checkout, res[1:])
		if err != nil {
			return nil, err
		}
		switch h.Status {
		case holdfast.StatusClaimed:
			return nil, holdfast.ErrHoldClaimed
		case holdfast.StatusReleased:
			return nil, holdfast.ErrHoldReleased
		}
		return nil, holdfast.ErrHoldExpired
	}
	return decodeHold(shop, checkout, res[1:])
}

// Hold implements legacy.Store.
func (s *Store) Hold(ctx context.Context, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	if err := validCheckout(shop, checkout); err != nil {
		return nil, err
	}
	v, err := s.rdb.HMGet(ctx, s.holdKey(shop, checkout), "status", "lines", "created", "expires", "deadline", "ended").Result()
	if err != nil {
		return nil, unavailable(err)
	}
	if v[0] == nil {
		return nil, holdfast.ErrNotFound
	}
	fields := make([]string, len(v))
	for i, x := range v {
		if str, ok := x.(string); ok {
			fields[i] = str
		}
	}
	return decodeHold(shop, checkout, fields)
}

// Count implements legacy.Store: the ledger's on-hand and the counter.
func (s *Store) Count(ctx context.Context, k holdfast.Key) (legacy.Count, error) {
	c := legacy.Count{Key: k}
	if err := s.pool.QueryRow(ctx, file("sql/ledger_read.sql"), k.ShopID, k.ItemID, k.LocationID).Scan(&c.OnHand); err != nil {
		return c, fmt.Errorf("%w: legacy ledger: %v", holdfast.ErrUnavailable, err)
	}
	n, err := s.rdb.Get(ctx, s.CounterKey(k)).Int64()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return c, unavailable(err)
	}
	c.Reservable = n
	return c, nil
}

// ChangeStock implements legacy.Store as the legacy did: the ledger row
// changes in SQL, then the counter moves by the same difference (INCRBY).
func (s *Store) ChangeStock(ctx context.Context, ch holdfast.StockChange) (legacy.Count, error) {
	k := ch.Key
	c := legacy.Count{Key: k}
	if k.ShopID <= 0 || k.ItemID <= 0 || k.LocationID <= 0 {
		return c, &holdfast.ArgumentError{Field: "key", Reason: "ids must be positive"}
	}
	if ch.Set != nil && (*ch.Set < 0 || *ch.Set > holdfast.AvailableMax) {
		return c, &holdfast.ArgumentError{Field: "set", Reason: "out of range"}
	}
	var old, now int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, file("sql/ledger_lock.sql"), k.ShopID, k.ItemID, k.LocationID).Scan(&old); err != nil {
			return err
		}
		now = old + int64(ch.Delta)
		if ch.Set != nil {
			now = int64(*ch.Set)
		}
		_, err := tx.Exec(ctx, file("sql/ledger_set.sql"), k.ShopID, k.ItemID, k.LocationID, now)
		return err
	})
	if err != nil {
		return c, fmt.Errorf("%w: legacy ledger: %v", holdfast.ErrUnavailable, err)
	}
	n, err := s.rdb.IncrBy(ctx, s.CounterKey(k), now-old).Result()
	if err != nil {
		return c, unavailable(err)
	}
	c.OnHand, c.Reservable = now, n
	return c, nil
}

// ExpireOnce implements legacy.Store: it ends due holds, in batches of
// Config.ExpireBatch, giving their units back with INCRBY.
func (s *Store) ExpireOnce(ctx context.Context) (int, error) {
	total := 0
	for {
		due, err := s.rdb.ZRangeArgs(ctx, goredis.ZRangeArgs{
			Key: s.expiryKey(), Start: "-inf", Stop: strconv.FormatInt(ms(s.cfg.Now()), 10),
			ByScore: true, Count: int64(s.cfg.ExpireBatch),
		}).Result()
		if err != nil {
			return total, unavailable(err)
		}
		for _, hk := range due {
			shop, checkout, ok := s.parseHoldKey(hk)
			if !ok {
				s.rdb.ZRem(ctx, s.expiryKey(), hk)
				continue
			}
			h, err := s.Hold(ctx, shop, checkout)
			if errors.Is(err, holdfast.ErrNotFound) {
				s.rdb.ZRem(ctx, s.expiryKey(), hk)
				continue
			}
			if err != nil {
				return total, err
			}
			res, err := s.end(ctx, h, holdfast.StatusExpired)
			if err != nil {
				return total, err
			}
			if res[0] == "ended" {
				total++
			}
		}
		if len(due) < s.cfg.ExpireBatch {
			return total, nil
		}
	}
}

func (s *Store) parseHoldKey(hk string) (int64, uuid.UUID, bool) {
	rest, ok := strings.CutPrefix(hk, s.cfg.Prefix+"hold:")
	if !ok {
		return 0, uuid.Nil, false
	}
	shopStr, idStr, ok := strings.Cut(rest, ":")
	shop, err1 := strconv.ParseInt(shopStr, 10, 64)
	id, err2 := uuid.Parse(idStr)
	return shop, id, ok && err1 == nil && err2 == nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func unavailable(err error) error {
	return fmt.Errorf("%w: legacy redis: %v", holdfast.ErrUnavailable, err)
}

func validCheckout(shop int64, checkout uuid.UUID) error {
	if shop <= 0 {
		return &holdfast.ArgumentError{Field: "shop_id", Reason: "must be a positive integer"}
	}
	if checkout == uuid.Nil {
		return &holdfast.ArgumentError{Field: "checkout_id", Reason: "must be a non-nil UUID"}
	}
	return nil
}

func normLines(in []holdfast.Line) ([]holdfast.Line, error) {
	if len(in) == 0 || len(in) > LinesPerCartMax {
		return nil, &holdfast.ArgumentError{Field: "lines", Reason: fmt.Sprintf("must have 1 to %d lines", LinesPerCartMax)}
	}
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b holdfast.Line) int {
		if a.ItemID != b.ItemID {
			return cmpInt(a.ItemID, b.ItemID)
		}
		return cmpInt(a.LocationID, b.LocationID)
	})
	for i, l := range out {
		if l.ItemID <= 0 || l.LocationID <= 0 || l.Quantity <= 0 || l.Quantity > holdfast.QuantityMaxDefault {
			return nil, &holdfast.ArgumentError{Field: fmt.Sprintf("lines[%d]", i), Reason: "ids and quantity must be positive, quantity within bounds"}
		}
		if i > 0 && l.ItemID == out[i-1].ItemID && l.LocationID == out[i-1].LocationID {
			return nil, &holdfast.ArgumentError{Field: fmt.Sprintf("lines[%d]", i), Reason: "duplicate item and location"}
		}
	}
	return out, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func encodeLines(lines []holdfast.Line) string {
	parts := make([]string, len(lines))
	for i, l := range lines {
		parts[i] = fmt.Sprintf("%d:%d:%d", l.ItemID, l.LocationID, l.Quantity)
	}
	return strings.Join(parts, ",")
}

func decodeLines(s string) ([]holdfast.Line, error) {
	var out []holdfast.Line
	for _, p := range strings.Split(s, ",") {
		f := strings.Split(p, ":")
		if len(f) != 3 {
			return nil, fmt.Errorf("legacy/redis: bad lines %q", s)
		}
		item, e1 := strconv.ParseInt(f[0], 10, 64)
		loc, e2 := strconv.ParseInt(f[1], 10, 64)
		q, e3 := strconv.Atoi(f[2])
		if e1 != nil || e2 != nil || e3 != nil {
			return nil, fmt.Errorf("legacy/redis: bad lines %q", s)
		}
		out = append(out, holdfast.Line{ItemID: item, LocationID: loc, Quantity: q})
	}
	return out, nil
}

// decodeHold reads status, lines, created, expires, deadline, ended.
func decodeHold(shop int64, checkout uuid.UUID, f []string) (*holdfast.Hold, error) {
	if len(f) < 5 {
		return nil, fmt.Errorf("legacy/redis: short hold record %q", f)
	}
	lines, err := decodeLines(f[1])
	if err != nil {
		return nil, err
	}
	h := &holdfast.Hold{CheckoutID: checkout, ShopID: shop, Status: holdfast.Status(f[0]), Lines: lines,
		CreatedAt: msTime(f[2]), ExpiresAt: msTime(f[3]), Deadline: msTime(f[4])}
	if len(f) > 5 && f[5] != "" {
		t := msTime(f[5])
		h.EndedAt = &t
	}
	return h, nil
}

func msTime(s string) time.Time {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.UnixMilli(n).UTC()
}

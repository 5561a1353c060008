package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// keyPrefix starts every API key, so keys are recognisable in secret
// scanners and never confused with key ids.
const keyPrefix = "hf_"

// keyLen is the length of every key: the prefix and 32 random bytes in
// unpadded base64url. Anything else is refused before the database.
const keyLen = len(keyPrefix) + 43

// Bounds of key management.
const (
	// KeyNameMaxLen bounds a key's name.
	KeyNameMaxLen = 100
	// KeyMissTTL is how long a server remembers that a key is unknown, so a
	// repeated bad key costs no lookup. A key presented before it was
	// created is refused for at most this long.
	KeyMissTTL = time.Second
	// KeyLookupsMax bounds the lookups of keys this server has not seen
	// live, in flight at once; KeyLookupQueueMax bounds those waiting for
	// one (past it: 503 overloaded; a waiting lookup costs a goroutine, and
	// 512 lets a 500-client flood be told 401, not 503). Keys it has seen
	// live are refreshed outside these bounds, so a flood of unknown keys
	// cannot delay a shop whose key the server knows.
	KeyLookupsMax     = 4
	KeyLookupQueueMax = 512
	// KeyTouchInterval is how often a server records a key's last use.
	KeyTouchInterval = time.Minute
	// KeyLookupTimeout bounds one key lookup. It runs apart from the
	// request that started it: the requests sharing it wait on their own
	// deadlines, so one caller giving up fails nobody else.
	KeyLookupTimeout = 5 * time.Second
)

// Scope is what a key may do within its shop.
type Scope string

// Scopes.
const (
	// ScopeStorefront reserves, claims, releases, extends and reads holds,
	// and reads stock levels.
	ScopeStorefront Scope = "storefront"
	// ScopeInventory sets and adjusts stock, and reads stock levels.
	ScopeInventory Scope = "inventory"
)

// ScopesAll is every scope: the scopes of a key created without any.
var ScopesAll = []Scope{ScopeInventory, ScopeStorefront}

// APIKey is an API key's record. The key itself is never stored: only its
// SHA-256.
type APIKey struct {
	ID         int64      `json:"id"`
	ShopID     int64      `json:"shop_id,omitempty"` // 0 for an admin key
	Admin      bool       `json:"admin"`
	Name       string     `json:"name,omitempty"`
	Scopes     []Scope    `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// KeySpec describes a key to create.
type KeySpec struct {
	// ShopID is the one shop the key reaches; 0 with Admin.
	ShopID int64
	// Admin keys reach every shop.
	Admin bool
	// Name is a label for people (at most KeyNameMaxLen bytes).
	Name string
	// Scopes limits what the key may do. Empty means ScopesAll.
	Scopes []Scope
	// ExpiresAt, when not zero, is when the key stops working.
	ExpiresAt time.Time
}

// ErrKeyNotFound is returned by RevokeKey and RotateKey when no live key
// matches.
var ErrKeyNotFound = errors.New("httpapi: no live key with that id")

// CreateKey stores a new key with every scope for shopID (admin false) or
// an admin key reaching every shop (admin true, shopID 0) in st, and
// returns the key. It is shown once: only its hash is stored. See
// CreateKeyWith.
func CreateKey(ctx context.Context, st Store, shopID int64, admin bool) (string, *APIKey, error) {
	return CreateKeyWith(ctx, st, KeySpec{ShopID: shopID, Admin: admin})
}

// CreateKeyWith stores a new key as spec says in st and returns it (shown
// once).
func CreateKeyWith(ctx context.Context, st Store, spec KeySpec) (string, *APIKey, error) {
	switch {
	case spec.Admin == (spec.ShopID != 0):
		return "", nil, errors.New("httpapi: a key is either for one shop (shop id > 0) or admin")
	case spec.ShopID < 0:
		return "", nil, errors.New("httpapi: shop id must be positive")
	case len(spec.Name) > KeyNameMaxLen:
		return "", nil, fmt.Errorf("httpapi: a key name has at most %d bytes", KeyNameMaxLen)
	case !spec.ExpiresAt.IsZero() && !spec.ExpiresAt.After(time.Now()):
		return "", nil, errors.New("httpapi: a key's expiry must be in the future")
	}
	scopes, err := normScopes(spec.Scopes)
	if err != nil {
		return "", nil, err
	}
	key, hash, err := newKey()
	if err != nil {
		return "", nil, err
	}
	rec := &APIKey{ShopID: spec.ShopID, Admin: spec.Admin, Name: spec.Name, Scopes: scopes}
	if !spec.ExpiresAt.IsZero() {
		exp := spec.ExpiresAt
		rec.ExpiresAt = &exp
	}
	if err := st.InsertKey(ctx, hash[:], rec); err != nil {
		return "", nil, fmt.Errorf("httpapi: create key: %w", err)
	}
	return key, rec, nil
}

// newKey makes a random key and its SHA-256.
func newKey() (string, [32]byte, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", raw, err
	}
	key := keyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	return key, sha256.Sum256([]byte(key)), nil
}

// ParseScopes parses a comma-separated list of scopes ("storefront",
// "inventory", or "all"); empty is every scope.
func ParseScopes(s string) ([]Scope, error) {
	var out []Scope
	for _, f := range strings.Split(s, ",") {
		switch f = strings.TrimSpace(f); f {
		case "":
		case "all":
			out = append(out, ScopesAll...)
		default:
			out = append(out, Scope(f))
		}
	}
	return normScopes(out)
}

func normScopes(in []Scope) ([]Scope, error) {
	if len(in) == 0 {
		return slices.Clone(ScopesAll), nil
	}
	var out []Scope
	for _, s := range in {
		if !slices.Contains(ScopesAll, s) {
			return nil, fmt.Errorf("httpapi: unknown scope %q; scopes: storefront, inventory, all", s)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ScopeStrings is scopes as the strings a store keeps.
func ScopeStrings(s []Scope) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = string(x)
	}
	return out
}

// idOrHash parses a key id or a key.
func idOrHash(idOrKey string) (int64, []byte, error) {
	if strings.HasPrefix(idOrKey, keyPrefix) {
		h := sha256.Sum256([]byte(idOrKey))
		return 0, h[:], nil
	}
	n, err := strconv.ParseInt(idOrKey, 10, 64)
	if err != nil || n <= 0 {
		return 0, nil, fmt.Errorf("httpapi: %q is neither a key id nor a key", idOrKey)
	}
	return n, nil, nil
}

// RevokeKey revokes a live key in st given its id or the key itself, and
// returns its id. Servers notice within their key cache TTL
// (Config.KeyCacheTTL).
func RevokeKey(ctx context.Context, st Store, idOrKey string) (int64, error) {
	id, hash, err := idOrHash(idOrKey)
	if err != nil {
		return 0, err
	}
	got, err := st.RevokeKey(ctx, id, hash)
	if errors.Is(err, ErrKeyNotFound) {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("httpapi: revoke key: %w", err)
	}
	return got, nil
}

// RotateKey replaces a live key (by id or the key itself): it creates a
// new key with the same shop, scopes and name, and makes the old one
// expire after grace (0: at once), so both work while callers switch over.
// It returns the new key (shown once) and its record.
func RotateKey(ctx context.Context, st Store, idOrKey string, grace time.Duration) (string, *APIKey, error) {
	id, hash, err := idOrHash(idOrKey)
	if err != nil {
		return "", nil, err
	}
	if grace < 0 {
		return "", nil, errors.New("httpapi: a rotation's grace period must not be negative")
	}
	key, newHash, err := newKey()
	if err != nil {
		return "", nil, err
	}
	rec, err := st.RotateKey(ctx, id, hash, newHash[:], grace)
	if errors.Is(err, ErrKeyNotFound) {
		return "", nil, err
	}
	if err != nil {
		return "", nil, fmt.Errorf("httpapi: rotate key: %w", err)
	}
	return key, rec, nil
}

// ListKeys returns at most limit keys of st, newest first, revoked ones
// included.
func ListKeys(ctx context.Context, st Store, limit int) ([]APIKey, error) {
	keys, err := st.ListKeys(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("httpapi: list keys: %w", err)
	}
	return keys, nil
}

// principal is who a request authenticated as.
type principal struct {
	keyID                 int64
	name                  string // the key's name, for the audit log
	shop                  int64  // 0 for admin
	admin                 bool
	storefront, inventory bool
}

// mayAccess reports whether p reaches shop.
func (p principal) mayAccess(shop int64) bool { return p.admin || p.shop == shop }

// has reports whether p holds scope.
func (p principal) has(s Scope) bool {
	switch s {
	case ScopeStorefront:
		return p.storefront
	case ScopeInventory:
		return p.inventory
	}
	return true // "": any scope
}

// keyCacheMax bounds the authenticator's caches.
const keyCacheMax = 10_000

// authenticator resolves bearer keys to principals. A key of the wrong
// shape is refused without the database. Otherwise it is looked up by
// SHA-256 in api_keys and the stored hash compared in constant time. Live
// keys are cached for ttl (a revocation takes at most that long to reach
// this server), unknown ones for KeyMissTTL. Concurrent lookups of one key
// share one query; lookups of keys not seen live run under their own small
// bound (KeyLookupsMax), so a flood of bad keys neither takes the API's
// connection slots nor delays the refresh of a known key. It is safe for
// concurrent use.
type authenticator struct {
	store Store // nil: the ceiling, which knows only its own key
	ttl   time.Duration

	lookups      chan struct{}
	lookupsQueue atomic.Int64
	touching     chan struct{}
	// touches are the background work (last-used writes, key lookups);
	// stop waits for it (cancelling what runs past its deadline), so none
	// outlives the server.
	touches     sync.WaitGroup
	touchCtx    context.Context
	stopTouches context.CancelFunc
	stopping    bool // under mu: no new touches

	mu      sync.Mutex
	cache   map[[32]byte]cachedKey
	misses  map[[32]byte]miss
	flights map[[32]byte]*flight
	touched map[int64]time.Time
}

// miss is a refused key remembered until exp, with its refusal.
type miss struct {
	exp time.Time
	err *badKeyError
}

type cachedKey struct {
	p   principal
	exp time.Time
}

type flight struct {
	done    chan struct{}
	p       principal
	err     error
	waiters int // requests that joined it, under authenticator.mu (tests)
}

func newAuthenticator(store Store, ttl time.Duration) *authenticator {
	ctx, cancel := context.WithCancel(context.Background())
	return &authenticator{
		store: store, ttl: ttl, touchCtx: ctx, stopTouches: cancel,
		lookups:  make(chan struct{}, KeyLookupsMax),
		touching: make(chan struct{}, 2),
		cache:    map[[32]byte]cachedKey{},
		misses:   map[[32]byte]miss{},
		flights:  map[[32]byte]*flight{},
		touched:  map[int64]time.Time{},
	}
}

var errBadKey = errors.New("unknown, expired or revoked key")

// Why a key was refused (badKeyError.reason), in the answer's code and the
// request's log line.
const (
	keyMalformed = "malformed" // not the shape of a key CreateKey makes
	keyUnknown   = "unknown"   // no key with this value in this database
	keyExpired   = "expired"   // past its expiry (a rotated key's grace ended)
	keyRevoked   = "revoked"
)

// badKeyError is a refused key: why, and the key's id when the database
// knows the key (expired, revoked). Saying which is safe: only a caller
// holding the key itself learns that it was revoked or expired. It matches
// errBadKey.
type badKeyError struct {
	reason string
	keyID  int64
}

func (e *badKeyError) Error() string   { return e.reason + " key" }
func (e *badKeyError) Is(t error) bool { return t == errBadKey }

// wellFormed reports whether key has the shape of a key CreateKey makes.
func wellFormed(key string) bool {
	if len(key) != keyLen || !strings.HasPrefix(key, keyPrefix) {
		return false
	}
	for i := len(keyPrefix); i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// authenticate returns the principal of key, errBadKey, an *apiError
// (lookups overloaded) or a database error.
func (a *authenticator) authenticate(ctx context.Context, key string) (principal, error) {
	if !wellFormed(key) {
		return principal{}, &badKeyError{reason: keyMalformed}
	}
	hash := sha256.Sum256([]byte(key))
	now := time.Now()
	a.mu.Lock()
	c, known := a.cache[hash]
	if known && now.Before(c.exp) {
		a.mu.Unlock()
		a.touch(c.p.keyID, now)
		return c.p, nil
	}
	if m, ok := a.misses[hash]; ok && now.Before(m.exp) {
		a.mu.Unlock()
		return principal{}, m.err
	}
	f, joined := a.flights[hash]
	inline := false
	if joined {
		f.waiters++
	} else {
		f = &flight{done: make(chan struct{})}
		a.flights[hash] = f
		if inline = a.stopping; !inline {
			a.touches.Add(1)
		}
	}
	a.mu.Unlock()
	if !joined {
		run := func(ctx context.Context) {
			f.p, f.err = a.lookup(ctx, hash, known)
			a.mu.Lock()
			delete(a.flights, hash)
			a.mu.Unlock()
			close(f.done)
		}
		if inline {
			run(ctx)
		} else {
			// Apart from this request: if it gives up, the requests that
			// joined the lookup still get its answer.
			go func() {
				defer a.touches.Done()
				lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), KeyLookupTimeout)
				defer cancel()
				defer context.AfterFunc(a.touchCtx, cancel)()
				run(lctx)
			}()
		}
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return principal{}, ctx.Err()
	}
	if f.err == nil && !joined {
		a.touch(f.p.keyID, now)
	}
	return f.p, f.err
}

func (a *authenticator) lookup(ctx context.Context, hash [32]byte, known bool) (principal, error) {
	if a.store == nil { // the ceiling: only its own key
		return principal{}, &badKeyError{reason: keyUnknown}
	}
	if !known {
		if a.lookupsQueue.Add(1) > KeyLookupQueueMax {
			a.lookupsQueue.Add(-1)
			return principal{}, overloaded(time.Second, "too many key lookups in flight")
		}
		select {
		case a.lookups <- struct{}{}:
			a.lookupsQueue.Add(-1)
		case <-ctx.Done():
			a.lookupsQueue.Add(-1)
			return principal{}, ctx.Err()
		}
		defer func() { <-a.lookups }()
	}
	k, found, err := a.store.LookupKey(ctx, hash[:])
	now := time.Now()
	if err == nil && (!found || subtle.ConstantTimeCompare(k.Hash, hash[:]) != 1 || k.Revoked || k.Expired) {
		bad := &badKeyError{reason: keyUnknown}
		switch {
		case !found || subtle.ConstantTimeCompare(k.Hash, hash[:]) != 1:
		case k.Revoked:
			bad.reason, bad.keyID = keyRevoked, k.ID
		default:
			bad.reason, bad.keyID = keyExpired, k.ID
		}
		a.mu.Lock()
		delete(a.cache, hash)
		if a.ttl > 0 {
			if len(a.misses) >= keyCacheMax {
				clear(a.misses)
			}
			a.misses[hash] = miss{exp: now.Add(KeyMissTTL), err: bad}
		}
		a.mu.Unlock()
		return principal{}, bad
	}
	if err != nil {
		return principal{}, err
	}
	p := principal{keyID: k.ID, name: k.Name, shop: k.Shop, admin: k.Admin}
	for _, s := range k.Scopes {
		switch s {
		case ScopeStorefront:
			p.storefront = true
		case ScopeInventory:
			p.inventory = true
		}
	}
	if a.ttl > 0 {
		exp := now.Add(a.ttl)
		if k.Left != nil {
			if e := now.Add(*k.Left); e.Before(exp) {
				exp = e
			}
		}
		a.mu.Lock()
		if len(a.cache) >= keyCacheMax {
			clear(a.cache)
		}
		a.cache[hash] = cachedKey{p: p, exp: exp}
		a.mu.Unlock()
	}
	return p, nil
}

// touch records a key's use in the database at most once per
// KeyTouchInterval, in the background, skipping it when two are already
// being written.
func (a *authenticator) touch(id int64, now time.Time) {
	a.mu.Lock()
	last, ok := a.touched[id]
	if ok && now.Sub(last) < KeyTouchInterval {
		a.mu.Unlock()
		return
	}
	if len(a.touched) >= keyCacheMax {
		clear(a.touched)
	}
	a.touched[id] = now
	a.mu.Unlock()
	select {
	case a.touching <- struct{}{}:
	default:
		a.mu.Lock()
		delete(a.touched, id) // try again with the next request
		a.mu.Unlock()
		return
	}
	a.mu.Lock()
	if a.stopping { // Add after Wait is not allowed
		a.mu.Unlock()
		<-a.touching
		return
	}
	a.touches.Add(1)
	a.mu.Unlock()
	go func() {
		defer a.touches.Done()
		defer func() { <-a.touching }()
		ctx, cancel := context.WithTimeout(a.touchCtx, 5*time.Second)
		defer cancel()
		_ = a.store.TouchKey(ctx, id)
	}()
}

// stop lets the last-used writes in flight finish while ctx allows, then
// cancels the rest and waits for them; later touches are skipped.
func (a *authenticator) stop(ctx context.Context) {
	a.mu.Lock()
	a.stopping = true
	stopped := make(chan struct{})
	go func() { a.touches.Wait(); close(stopped) }()
	a.mu.Unlock()
	select {
	case <-stopped:
	case <-ctx.Done():
	}
	a.stopTouches()
	<-stopped
}

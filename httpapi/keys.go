package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// stmt returns an embedded statement with its sqlcommenter comment.
func stmt(route, name string) string {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("httpapi: no statement " + name)
	}
	return "/* app='holdfast',route='" + route + "' */ " + string(b)
}

var (
	sqlKeyLookup = stmt("auth", "key_lookup")
	sqlKeyInsert = stmt("keys", "key_insert")
	sqlKeyRevoke = stmt("keys", "key_revoke")
	sqlKeyList   = stmt("keys", "key_list")
)

// keyPrefix starts every API key, so keys are recognisable in secret
// scanners and never confused with key ids.
const keyPrefix = "hf_"

// keyLenMax bounds the Authorization value hashed per request.
const keyLenMax = 256

// APIKey is an API key's record. The key itself is never stored: only its
// SHA-256.
type APIKey struct {
	ID        int64      `json:"id"`
	ShopID    int64      `json:"shop_id,omitempty"` // 0 for an admin key
	Admin     bool       `json:"admin"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// ErrKeyNotFound is returned by RevokeKey when no live key matches.
var ErrKeyNotFound = errors.New("httpapi: no live key with that id")

// CreateKey stores a new key for shopID (admin false) or an admin key
// reaching every shop (admin true, shopID 0), and returns the key. It is
// shown once: only its hash is stored.
func CreateKey(ctx context.Context, pool *pgxpool.Pool, shopID int64, admin bool) (string, *APIKey, error) {
	if admin == (shopID != 0) {
		return "", nil, errors.New("httpapi: a key is either for one shop (shop id > 0) or admin")
	}
	if shopID < 0 {
		return "", nil, errors.New("httpapi: shop id must be positive")
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", nil, err
	}
	key := keyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	hash := sha256.Sum256([]byte(key))
	rec := &APIKey{ShopID: shopID, Admin: admin}
	var shop *int64
	if !admin {
		shop = &shopID
	}
	if err := pool.QueryRow(ctx, sqlKeyInsert, hash[:], shop, admin).Scan(&rec.ID, &rec.CreatedAt); err != nil {
		return "", nil, fmt.Errorf("httpapi: create key: %w", err)
	}
	return key, rec, nil
}

// RevokeKey revokes a live key given its id or the key itself, and returns
// its id. Servers notice within their key cache TTL (Config.KeyCacheTTL).
func RevokeKey(ctx context.Context, pool *pgxpool.Pool, idOrKey string) (int64, error) {
	var id int64
	var hash []byte
	if strings.HasPrefix(idOrKey, keyPrefix) {
		h := sha256.Sum256([]byte(idOrKey))
		hash = h[:]
	} else {
		n, err := strconv.ParseInt(idOrKey, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("httpapi: %q is neither a key id nor a key", idOrKey)
		}
		id = n
	}
	var got int64
	err := pool.QueryRow(ctx, sqlKeyRevoke, id, hash).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrKeyNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("httpapi: revoke key: %w", err)
	}
	return got, nil
}

// ListKeys returns at most limit keys, newest first, revoked ones included.
func ListKeys(ctx context.Context, pool *pgxpool.Pool, limit int) ([]APIKey, error) {
	rows, err := pool.Query(ctx, sqlKeyList, limit)
	if err != nil {
		return nil, fmt.Errorf("httpapi: list keys: %w", err)
	}
	var keys []APIKey
	for rows.Next() {
		var k APIKey
		var shop *int64
		if err := rows.Scan(&k.ID, &shop, &k.Admin, &k.CreatedAt, &k.RevokedAt); err != nil {
			return nil, err
		}
		if shop != nil {
			k.ShopID = *shop
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// principal is who a request authenticated as.
type principal struct {
	keyID int64
	shop  int64 // 0 for admin
	admin bool
}

// mayAccess reports whether p reaches shop.
func (p principal) mayAccess(shop int64) bool { return p.admin || p.shop == shop }

// keyCacheMax bounds the authenticator's cache.
const keyCacheMax = 10_000

// authenticator resolves bearer keys to principals: a lookup by SHA-256 in
// api_keys, then a constant-time comparison of the stored hash with the
// presented key's. Live keys are cached for ttl (a revocation takes at most
// that long to reach this server); unknown keys are never cached. It is
// safe for concurrent use.
type authenticator struct {
	pool *pgxpool.Pool
	ttl  time.Duration

	mu    sync.Mutex
	cache map[[32]byte]cachedKey
}

type cachedKey struct {
	p   principal
	exp time.Time
}

var errBadKey = errors.New("unknown or revoked key")

// authenticate returns the principal of key, errBadKey, or a database error.
// acquire bounds the lookup with the server's in-flight limit.
func (a *authenticator) authenticate(ctx context.Context, key string, acquire func(context.Context) (func(), *apiError)) (principal, error) {
	if len(key) == 0 || len(key) > keyLenMax {
		return principal{}, errBadKey
	}
	hash := sha256.Sum256([]byte(key))
	now := time.Now()
	if a.ttl > 0 {
		a.mu.Lock()
		c, ok := a.cache[hash]
		a.mu.Unlock()
		if ok && now.Before(c.exp) {
			return c.p, nil
		}
	}
	release, apiErr := acquire(ctx)
	if apiErr != nil {
		return principal{}, apiErr
	}
	defer release()
	var p principal
	var stored []byte
	var shop *int64
	err := a.pool.QueryRow(ctx, sqlKeyLookup, hash[:]).Scan(&p.keyID, &stored, &shop, &p.admin)
	if errors.Is(err, pgx.ErrNoRows) {
		return principal{}, errBadKey
	}
	if err != nil {
		return principal{}, err
	}
	if subtle.ConstantTimeCompare(stored, hash[:]) != 1 {
		return principal{}, errBadKey
	}
	if shop != nil {
		p.shop = *shop
	}
	if a.ttl > 0 {
		a.mu.Lock()
		if len(a.cache) >= keyCacheMax {
			clear(a.cache)
		}
		a.cache[hash] = cachedKey{p: p, exp: now.Add(a.ttl)}
		a.mu.Unlock()
	}
	return p, nil
}

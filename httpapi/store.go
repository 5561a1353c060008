package httpapi

import (
	"context"
	"errors"
	"time"
)

// Store is what the service keeps itself, beside the engine's tables: its
// API keys (the api_keys table), the console's session checks and its
// readiness. PostgresStore and MySQLStore are the two; Config.Store picks
// one, and Config.Pool (or a PostgreSQL Config.Client) means
// PostgresStore, a MySQL engine (*mysql.Client) MySQLStore on its pool.
// Its methods are unexported: a Store is made by those constructors only.
// Both are safe for concurrent use.
type Store interface {
	// insertKey stores a new key's record under the SHA-256 of the key and
	// fills in rec's ID and CreatedAt (the database's clock).
	insertKey(ctx context.Context, hash []byte, rec *APIKey) error
	// lookupKey returns the key with this hash, live or not (see
	// storedKey.revoked and expired), found false when there is none.
	lookupKey(ctx context.Context, hash []byte) (k storedKey, found bool, err error)
	// touchKey records a key's use.
	touchKey(ctx context.Context, id int64) error
	// revokeKey revokes the live key with this id (0: by hash) or hash
	// (nil: by id) and returns its id, or ErrKeyNotFound.
	revokeKey(ctx context.Context, id int64, hash []byte) (int64, error)
	// rotateKey, in one transaction, stores newHash as a key with the
	// shop, scopes and name of the live key with this id or hash, and
	// makes the old one expire after grace; ErrKeyNotFound when no live
	// key matches.
	rotateKey(ctx context.Context, id int64, hash, newHash []byte, grace time.Duration) (*APIKey, error)
	// listKeys returns at most limit keys, newest first.
	listKeys(ctx context.Context, limit int) ([]APIKey, error)
	// adminLive reports whether the key with this id is a live admin key.
	adminLive(ctx context.Context, id int64) (bool, error)
	// shops lists at most n shop ids with stock, in id order.
	shops(ctx context.Context, n int) ([]int64, error)
	// ready checks that the database answers and its schema is this
	// build's, and returns that schema version. A schema that is behind or
	// ahead is an error wrapping errSchemaNotCurrent.
	ready(ctx context.Context) (version int, err error)
}

// storedKey is a key's record, as authentication needs it.
type storedKey struct {
	id     int64
	hash   []byte
	shop   int64 // 0 for admin
	admin  bool
	scopes []Scope
	left   *time.Duration // until it expires, by the database's clock; nil: never
	// revoked and expired: the key is not live (a refusal says which).
	revoked, expired bool
}

// errSchemaNotCurrent marks a ready error of a schema behind or ahead of
// this build (503 schema_not_current from /readyz).
var errSchemaNotCurrent = errors.New("schema not current")

// schemaError wraps err as errSchemaNotCurrent, keeping its message.
type schemaError struct{ err error }

func (e schemaError) Error() string       { return e.err.Error() }
func (e schemaError) Unwrap() []error     { return []error{e.err, errSchemaNotCurrent} }
func asSchemaError(err error) schemaError { return schemaError{err: err} }

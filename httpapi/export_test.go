package httpapi

import "github.com/jackc/pgx/v5/pgxpool"

// PostgresStoreForTest is pgstore.Service, for this package's internal
// tests: they cannot import pgstore (it imports httpapi), so the external
// tests' init (main_test.go) sets it.
var PostgresStoreForTest func(pool *pgxpool.Pool) Store

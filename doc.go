// Package holdfast is the vocabulary of inventory reservations: the nouns
// a user of holdfast needs, whichever database runs it. It links no
// database driver.
//
// # Holds
//
// A Key is one stock-keeping position: an item at a location of a shop.
// Its Level says how many units are available (the ledger's stock), how
// many are held, and how many are sellable. A checkout reserves a cart —
// Lines of quantities at keys — and gets a Hold: every line is held, or
// none is (an *InsufficientStockError names every short line). The
// checkout's id is the idempotency key: retrying a reservation answers the
// same hold (Hold.Replayed), never a second one.
//
// # Lifecycle
//
// A hold is held until it ends one way: claimed (Engine.Claim: its units
// leave the stock for good, in the caller's transaction with ClaimTx),
// released (Engine.Release: its units go back), or expired (its TTL ran
// out and the sweeper gave its units back). Engine.Extend moves its expiry
// within Config.HoldLifetimeMax. Ending a hold twice gives a distinct,
// documented answer, never a second effect: a claimed hold claimed again
// is the same hold with Replayed set; a released one is ErrHoldReleased.
// A hold past its expiry that the sweeper has not taken is still
// claimable. A checkout may also wait (ReserveParams.Wait): it is held
// first-come-first-served from units that come back.
//
// # The invariant
//
// For every key, at every moment: units in the key's buffer plus units in
// active holds ≤ available; and every acknowledged, unexpired hold can be
// claimed. Engine.CheckInvariant checks it over a whole database. An
// answer is truthful: when a commit's outcome cannot be learnt the error
// is ErrOutcomeUnknown, never "nothing happened", and a retry with the
// same checkout id is safe.
//
// # Picking an engine
//
// Engine is the contract every engine offers. An engine is holdfast's one
// engine (package engine) over a database driver: import
// github.com/holdfast/holdfast/postgres for PostgreSQL (postgres.New on a
// pgx pool) or github.com/holdfast/holdfast/mysql for MySQL and MariaDB
// (mysql.New on a database/sql pool). Both answer alike, with the same
// Config defaults (StrategyBatch); each adds …Tx twins typed to its
// driver's transaction (pgx.Tx, *sql.Tx), so an application's order row
// and the claim commit together. PostgreSQL also offers StrategySlots.
//
// Errors a caller must tell apart are sentinels and typed errors
// (errors.go); bad input is an *ArgumentError naming the field.
package holdfast

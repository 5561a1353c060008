// Package holdfast reserves inventory for checkouts: a buyer's cart holds
// units while the buyer pays, and the hold ends in exactly one way.
//
// This package is the vocabulary every holdfast engine speaks — the nouns
// (Key, Line, Hold, Level, Event), the operations' parameters, the
// configuration and its bounds, and the typed errors — and the Engine
// contract. It links no database driver; the engines do.
//
// # Holds
//
// A key is one item at one location of one shop (Key). A hold is a
// checkout's reservation of units of one or more keys, all or nothing
// (Engine.Reserve with ReserveParams). It has a TTL (Config.HoldTTLDefault,
// 15 minutes, when the call names none) and a total lifetime
// (Config.HoldLifetimeMax, 1 hour) that Extend cannot pass. A hold is
// HELD until it ends in one of three ways, as a pending transfer is posted,
// voided or timed out:
//
//	held ──Claim──────▶ claimed   the units are deducted from the stock
//	  │  ──Release────▶ released  the units are sellable again
//	  └──(TTL passes)─▶ expired   the sweeper gives them back (SweepOnce)
//
// Edit changes a held cart's lines, moving only the differences;
// ClaimLines claims part of a cart and releases the rest. Ending a hold
// twice gives a distinct answer (ErrHoldClaimed, ErrHoldReleased,
// ErrHoldExpired), never a second effect.
//
// # The invariant
//
// For every key, at every moment: the units buffered for reservation plus
// the units in active holds are at most the available stock. Every
// acknowledged, unexpired hold can be claimed. Engine.CheckInvariant checks
// the whole database for it, and every test of the behaviour suite
// (package enginetest) ends with that check.
//
// Answers are truthful. A refusal is a typed error that says nothing
// happened (*InsufficientStockError, *ArgumentError, ErrNotStocked, …);
// when the engine cannot know whether its transaction committed (the
// connection broke during COMMIT) it says so with ErrOutcomeUnknown
// instead of guessing. Retrying is safe: Reserve is idempotent on
// (shop, checkout id) — the same lines again answer the same hold
// (Hold.Replayed), other lines ErrIdempotencyConflict.
//
// Every mutation has a twin that runs in the caller's own transaction
// (ReserveTx, ClaimTx, …), so an application's order row and the claim
// commit together. The twins are typed to each engine's transaction
// (pgx.Tx, *sql.Tx) and so live on the engines, not on Engine.
//
// # Picking an engine
//
// holdfast has one engine (package engine: engine.Client[TTx] implements
// Engine once) over a driver per database; two drivers exist, and each
// package below gives you the engine on its database. Both pass the same
// behaviour suite, with the same Config defaults:
//
//   - package postgres, on PostgreSQL through pgx (postgres.New with a
//     *pgxpool.Pool migrated by package postgres/migrations, or
//     `holdfast migrate`). It offers every strategy.
//   - package mysql, on MySQL or MariaDB through database/sql and
//     go-sql-driver/mysql (mysql.New with a *sql.DB whose driver config
//     went through mysql.Configure, migrated by package mysql/migrations).
//     It offers the strategies mysql.Strategies lists.
//
// Pick the database you already run. `holdfast serve --engine postgres`
// or `--engine mysql` (alias mariadb) serves either over HTTP (package
// httpapi); the Go HTTP client is package client.
//
//	pool, _ := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	var eng holdfast.Engine
//	eng, err := postgres.New(pool, holdfast.Config{})
//	…
//	h, err := eng.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id,
//		Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 2}}})
//
// # Picking a strategy
//
// A key's strategy is how its sellable units are buffered
// (Config.Strategy for every key, Engine.SetStrategy for one):
//
//   - StrategyBatch (the default): one counter row per key, with the
//     key's concurrent one-line reservations combined into one
//     transaction. The fastest on a hot key; uncontended it is the counter.
//   - StrategyCounter: one counter row taken with a conditional UPDATE.
//     Cheap, no bloat, a few thousand reservations a second per key.
//   - StrategyPool: a bounded pool of one row per unit, taken with FOR
//     UPDATE SKIP LOCKED and refilled in the background (Config.PoolCap).
//   - StrategySlots: the units spread over Config.Slots counter rows picked
//     with SKIP LOCKED, for ReserveTx callers that keep their transaction
//     open after reserving (PostgreSQL only).
//
// docs/PERFORMANCE.md has the measured figures behind these choices.
//
// # Fair drops
//
// A key may have a drop (Engine.SetDrop, drop.go): reservations with a
// BuyerID that reach it in the drop's window enter a lottery, one entry
// per buyer, and wait (ErrWaitlisted); at the window's end one draw puts
// them on the key's waitlist in the order HMAC-SHA256(seed, ticket) gives,
// and they are held in that order as stock allows. The seed is committed
// (its SHA-256 published) when the drop is set and revealed by the draw,
// so anyone can check the order with VerifyDrop.
package holdfast

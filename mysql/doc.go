// Package mysql is holdfast's engine on MySQL 8.0 and MariaDB 10.11 (the
// design of seed 003: Shopify's reservations on MySQL), through database/sql
// and github.com/go-sql-driver/mysql. *Client satisfies holdfast.Engine
// with the PostgreSQL Client's semantics — idempotency on (shop, checkout
// id), all-or-nothing carts, lines in (item, location) order, late claims
// that take afresh after the sweep, outcome records, an append-only ledger,
// over-committed keys — and adds …Tx twins on *sql.Tx (ReserveTx, ClaimTx,
// ReleaseTx, ExtendTx, ChangeStockTx) so an application's order row and the
// claim commit together.
//
// The schema is in package migrations (embedded, numbered, forward-only);
// every statement the engine sends is an embedded .sql file in sql/,
// prefixed with a comment tag (/* app='holdfast',route='reserve' */) that
// attributes the connection to its business process in the process list,
// the slow log and a proxy (seed 003's per-caller connection attribution).
// A context made with holdfast.WithTag adds the caller's tag
// (/* app='holdfast',route='reserve',tag='checkout' */), as on PostgreSQL;
// combined reservations (StrategyBatch) serve many callers in one
// transaction and carry no caller's tag. TestStatementsCarryTag.
//
// # The seed's four decisions, and the tests that prove them
//
//  1. reservation_units has the primary key (shop_id, inventory_item_id,
//     location_id, id): the rows a take locks with SELECT … FOR UPDATE SKIP
//     LOCKED are found in the clustered index, so a unit costs one row lock,
//     not two (secondary index + clustered record). TestOneRowLockPerUnit
//     reads InnoDB's count while a reservation is held open: q units, q row
//     locks; the seed's first layout, built beside it, locks 2q.
//  2. Every transaction the engine opens is READ COMMITTED (TxOptions): a
//     SKIP LOCKED take on an empty range takes no gap lock, so it never
//     blocks the insert that refills the range. TestEmptyRangeSkipLocked
//     shows the insert passing under READ COMMITTED and waiting (on the
//     supremum) under REPEATABLE READ. A …Tx operation that has to refill a
//     buffer inside a caller's transaction first checks that it reads
//     committed data (a probe row bumped outside and read inside), because a
//     snapshot read would compute the refill from stale numbers
//     (TestTxNeedsReadCommitted).
//  3. One lock order on every path: a reservation takes units from the
//     buffers first — counter rows in key order (waiting), then pool rows
//     with SKIP LOCKED (never waiting, so a reservation never holds pool
//     rows while it waits) — and only then inserts the hold and its
//     reserved_quantities lines — but for an optimistic combined batch
//     (combine.go), which inserts its new holds, lines and event rows
//     first and takes its counter rows last, in key order. Those rows are
//     its own and uncommitted, and no path that holds a counter row waits
//     for them, with one exception: a caller's transaction that took a
//     key's counter row (ReserveTx, ChangeStockTx) and then locks a hold
//     the batch is still writing (ClaimTx, ReleaseTx, ExtendTx of that
//     checkout). InnoDB detects that cycle (1213): the batch runs again,
//     or the caller is told ErrTxRolledBack. A claim touches only holds,
//     reserved_quantities and inventory_levels (in key order). Refills,
//     stock changes, strategy changes and late claims take the keys' lock
//     rows (inventory_locks) first, in key order; releases and sweeps only
//     try them (SKIP LOCKED). Statements that lock rows through a join with
//     JSON_TABLE use STRAIGHT_JOIN, so they find each row by key instead of
//     scanning (and waiting on) a shop's range. TestOppositeOrderCarts fails
//     on any deadlock InnoDB detects, not only on one that reaches a caller;
//     TestTakeLocksOnlyItsRows and TestLockingJoinsUsePrimaryKeys pin the
//     plans. TestRandomizedRaces found four deadlocks, each a break of this
//     order, now fixed: a DELETE joined to JSON_TABLE that scanned the
//     shop's pool rows; pool rows taken before a counter row; the slowest
//     path refilling a later key's counter before taking an earlier one;
//     an inline refill holding a counter row while it waited for the next
//     key's lock row. It logs the deadlocks InnoDB detects (none in 14
//     runs at 20 workers × 150 operations after the fixes). A reservation
//     with a buyer id on a limited item takes its buyer_locks rows (item
//     order) before all of this; nothing else locks them but the purge,
//     which skips locked rows (buyer.go).
//     First of all, every reservation attempt writes its checkout's
//     in-flight mark (a reserve_inflight row inserted and deleted at once,
//     whose lock lasts to COMMIT or ROLLBACK), and a combined batch writes
//     its checkouts' marks in checkout order, before its counter rows: a
//     retry of the checkout waits there for its first attempt, and the
//     sold-out hint probes the mark with NOWAIT and goes the normal way
//     when it is held (inflight.go; docs/FAULTS.md finding 7). Nothing else
//     touches the marks, so they close no cycle.
//  4. A cart's pool lines are fetched in one round trip: one UNION ALL of
//     per-line SELECT … LIMIT q FOR UPDATE SKIP LOCKED (the one place SQL
//     text is composed at runtime: n copies of an embedded fragment, values
//     always bound), then one DELETE joined to the taken ids.
//     TestCartOneRoundTrip counts the statements the server received for a
//     1-line and a 6-line cart: the same.
//
// # The per-key lock
//
// Refills need one writer per key, and the count they add must come from one
// read taken after the lock. The lock is a row of inventory_locks taken with
// SELECT … FOR UPDATE: transaction-scoped, so it is released by COMMIT or
// ROLLBACK and never outlives a transaction on a pooled connection, which a
// session-scoped GET_LOCK would (a connection returned to the pool with the
// lock still held, or a lock lost with a connection that a retry replaced).
// Waiters for a refill share the wait with LOCK IN SHARE MODE, then retry
// their take. The refill reads available, held and pooled in one statement
// (one read view under READ COMMITTED) and adds least(cap − pooled,
// available − held − pooled), where held counts every hold whose units are
// not back, expired-but-unswept ones included (the two seed defects;
// TestExpiredHoldStillOwnsUnits, TestRandomizedRaces).
//
// # Strategies
//
// StrategyCounter keeps a key's units in one
// row taken with a guarded UPDATE. StrategyPool is the seed's bounded
// row-per-unit pool (cap Config.PoolCap), taken with SKIP LOCKED.
// StrategyBatch uses the counter row and combines concurrent one-line
// Reserves on it (see combine.go); it is the default, as on PostgreSQL
// (holdfast.Config.WithDefaults). A batch of deep keys (OptimisticDepth
// units or more, as the client's last batch of each saw them) reads their
// counter rows without locking them, writes its holds and takes the units
// last, in key order, so that two batches of a hot key run at once but
// for their takes and COMMITs; a take that finds its row short rolls the
// batch back, and it runs once more with its rows locked first.
// StrategySlots is not offered.
//
// # MySQL 8.0 and MariaDB 10.11
//
// The SQL keeps to syntax both accept: SKIP LOCKED (MySQL 8.0.1, MariaDB
// 10.6), JSON_TABLE (MySQL 8.0.4, MariaDB 10.6), enforced CHECK constraints
// (MySQL 8.0.16, MariaDB 10.2), WITH RECURSIVE inside INSERT … SELECT,
// multi-table UPDATE and DELETE joined to JSON_TABLE, LOCK IN SHARE MODE
// (MariaDB 10.11 has no FOR SHARE), triggers with SIGNAL. Deliberate
// choices where the two differ:
//
//   - No RETURNING: MariaDB has it on INSERT and DELETE, MySQL has none. A
//     new hold's times are read back with a SELECT; a take is a SELECT …
//     FOR UPDATE SKIP LOCKED then a DELETE. The extra round trip is the
//     price of one dialect.
//   - No INSERT … AS new ON DUPLICATE KEY UPDATE (MySQL 8.0.19+ only), and
//     no upsert on a hot path at all: ON DUPLICATE KEY takes a next-key
//     lock on the duplicate even under READ COMMITTED. Counter rows are
//     created by an INSERT after an UPDATE that found none, lock rows by an
//     INSERT after a SELECT … FOR UPDATE that found none (a duplicate-key
//     error there is a retried race).
//   - Pool refills insert at most refillChunk (1,000) rows per statement:
//     MySQL bounds WITH RECURSIVE at cte_max_recursion_depth (1,000); the
//     Sequence engine (seq_1_to_N) is MariaDB-only.
//   - The isolation of the current transaction is never read from a
//     variable (@@tx_isolation on MariaDB 10.11, @@transaction_isolation on
//     MySQL and MariaDB 11.1+; neither shows SET TRANSACTION), nor from
//     INFORMATION_SCHEMA.INNODB_TRX (a cache refreshed at most every 100 ms):
//     see the probe above.
//   - innodb_thread_concurrency exists only on MySQL; nothing here needs it.
//   - innodb_autoinc_lock_mode: MySQL 8.0 defaults to 2 (interleaved),
//     MariaDB to 1, where an INSERT … SELECT holds the table's AUTO-INC lock
//     to the statement's end. The event triggers insert into
//     holdfast_events from inside such statements (claims' ledger rows), so
//     two transactions can deadlock on AUTO-INC locks, which InnoDB reports
//     as error 1467, not 1213. The engine retries 1467 like a deadlock
//     (the tests' server keeps MariaDB's default, so the retry is
//     exercised); 2 avoids the waits altogether and is recommended.
//
// The engine has been run against MariaDB 10.11 (the tests' private server,
// package mariadbcluster); against MySQL 8.0 it is untested here — run the
// tests with TEST_MYSQL_URL pointing at one.
//
// # Allocation across locations
//
// A line with LocationID 0 is allocated from its candidates (or the shop's
// default order, table location_orders) by the engine's reserveAllocated
// (engine/allocate.go) over this driver's allocation phases (allocate.go),
// on the plain path only: on the slowest level every
// candidate key's lock row in key order first; then, on the slower levels,
// every candidate's counter row in key order (alloc_lock.sql, a
// STRAIGHT_JOIN from the sorted keys); then one sellable read (lock-free on
// the fast level: it can only over-count), the choice in priority order,
// and the usual take of the resolved lines.
// The candidates' priority order never changes the lock order, so carts
// allocating the same items in opposite orders do not deadlock
// (enginetest AllocationRaces).
//
// # Connections
//
// New takes a *sql.DB whose DSN parses times (parseTime=true, UTC) and
// should interpolate arguments client-side (interpolateParams=true: one
// round trip per statement instead of prepare, execute, close) and bound
// lock waits (innodb_lock_wait_timeout); Configure sets all three and Open
// applies it. Deadlocks (1213) and lock wait timeouts (1205) re-run the
// client's own transactions with backoff. In a caller's transaction a
// lock wait timeout is retried inside the savepoint while the transaction
// lives; when InnoDB rolled the whole transaction back (a deadlock, 1467,
// or 1205 under innodb_rollback_on_timeout: the savepoint is gone) nothing
// is retried — it would run in autocommit — and the answer is
// holdfast.ErrTxRolledBack: roll the transaction back and run it again.
package mysql

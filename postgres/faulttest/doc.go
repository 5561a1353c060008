// Package faulttest is holdfast's fault-injection kit for PostgreSQL:
// the pieces its fault suites (in this directory's tests and in
// postgres/faulttest/restart) use to break the engine's surroundings on purpose and to
// prove afterwards that nothing was oversold or lost.
//
//   - Hook is a pgx tracer installed on the engine's pool: random pauses at
//     statement boundaries and a callback right before COMMIT is sent (where
//     a test terminates the backend).
//   - Proxy is a TCP proxy in front of PostgreSQL that lets a COMMIT reach
//     the server and drops the connection before the client reads the
//     answer: a commit whose outcome the client never learns.
//   - PgBouncer starts a real PgBouncer in transaction pooling mode.
//   - Env wires a client to a fresh database with an injected clock, records
//     what the client was told (Book) and every operation's call and return
//     (History), and Verify checks the invariant, that every acknowledged
//     hold is still claimable, and that no unit leaked.
//   - The recorded history is checked for linearizability by package
//     internal/history (engine-neutral: the behaviour suite uses it too),
//     which fails on anything but a proof.
//   - Tally counts injected faults and the checks run after them.
//
// See docs/FAULTS.md for the faults, what is checked and how to run the
// short, long and soak forms.
package faulttest

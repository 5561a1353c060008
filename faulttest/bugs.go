package faulttest

import "os"

// EngineFixed records that the engine carries the fixes for the bugs this
// suite found (docs/FAULTS.md, "Findings"). Flip it to true when they land:
// the reproductions then run by default, the random schedules stop
// avoiding the races, and PgBouncer connections use pgx's "exec" mode.
const EngineFixed = true

// ExecModeFixed records that the engine works in pgx's "exec" query mode
// (finding 2 in docs/FAULTS.md: argument types pgx cannot encode without
// the server's parameter description). Flip it to true when it does:
// PgBouncer connections then use "exec", and pgbouncer/exec-mode runs.
const ExecModeFixed = true

// ExecModeBugs reports whether the exec-mode reproduction runs:
// ExecModeFixed, or HOLDFAST_KNOWN_BUGS set.
func ExecModeBugs() bool { return ExecModeFixed || os.Getenv("HOLDFAST_KNOWN_BUGS") != "" }

// KnownBugs reports whether the known-bug reproductions run:
// EngineFixed, or HOLDFAST_KNOWN_BUGS set (to check a fix).
func KnownBugs() bool { return EngineFixed || os.Getenv("HOLDFAST_KNOWN_BUGS") != "" }

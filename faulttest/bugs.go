package faulttest

import "os"

// EngineFixed records that the engine carries the fixes for the bugs this
// suite found (docs/FAULTS.md, "Findings"). Flip it to true when they land:
// the reproductions then run by default, the random schedules stop
// avoiding the races, and PgBouncer connections use pgx's "exec" mode.
const EngineFixed = false

// KnownBugs reports whether the known-bug reproductions run:
// EngineFixed, or HOLDFAST_KNOWN_BUGS set (to check a fix).
func KnownBugs() bool { return EngineFixed || os.Getenv("HOLDFAST_KNOWN_BUGS") != "" }

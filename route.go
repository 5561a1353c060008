package holdfast

import (
	"context"
	"strings"
)

// Ops name the engine operation (the business process) behind each
// statement: they appear in the sqlcommenter comment of every statement
// the engine sends, in the engine's metrics (label "op") and in logs.
// "Route" means an HTTP route only (package httpapi).
const (
	OpReserve   = "reserve"
	OpClaim     = "claim"
	OpRelease   = "release"
	OpExtend    = "extend"
	OpAdjust    = "adjust"
	OpRead      = "read"
	OpSweep     = "sweep"
	OpReplenish = "replenish"
	OpPurge     = "purge"
)

// Deprecated: the Route… names of the Op… constants, kept while the
// engines (packages postgres and mysql, rewritten over a shared core in
// issue 25) still use them. Use Op….
const (
	RouteReserve   = OpReserve
	RouteClaim     = OpClaim
	RouteRelease   = OpRelease
	RouteExtend    = OpExtend
	RouteAdjust    = OpAdjust
	RouteRead      = OpRead
	RouteSweep     = OpSweep
	RouteReplenish = OpReplenish
	RoutePurge     = OpPurge
)

type tagKey struct{}

// WithTag returns a context whose statements carry tag in their
// sqlcommenter comment beside holdfast's own op, so an application's
// …Tx calls are attributed to its business process in pg_stat_activity.
// Characters other than letters, digits, '_', '-', '.' and ':' are dropped;
// at most 64 are kept.
func WithTag(ctx context.Context, tag string) context.Context {
	var b strings.Builder
	for _, r := range tag {
		if b.Len() >= 64 {
			break
		}
		if r == '_' || r == '-' || r == '.' || r == ':' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return context.WithValue(ctx, tagKey{}, b.String())
}

// Tag returns the tag WithTag put into ctx, as WithTag kept it (only
// letters, digits, '_', '-', '.' and ':', at most 64), or "" when ctx has
// none. Other engines (package mysql) read it to tag their statements.
func Tag(ctx context.Context) string {
	tag, _ := ctx.Value(tagKey{}).(string)
	return tag
}

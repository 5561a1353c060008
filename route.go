package holdfast

import (
	"context"
	"strings"
)

// Routes name the business process behind each statement: they appear in
// the sqlcommenter comment of every statement the engine sends, in metrics
// and in logs.
const (
	RouteReserve   = "reserve"
	RouteClaim     = "claim"
	RouteRelease   = "release"
	RouteExtend    = "extend"
	RouteAdjust    = "adjust"
	RouteRead      = "read"
	RouteSweep     = "sweep"
	RouteReplenish = "replenish"
	RoutePurge     = "purge"
)

type tagKey struct{}

// WithTag returns a context whose statements carry tag in their
// sqlcommenter comment beside holdfast's own route, so an application's
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

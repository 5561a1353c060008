package postgres

import (
	"context"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/sqltext"
)

type textKey struct{ route, name, tag string }

// q returns the named statement prefixed with its sqlcommenter comment. The
// comment is the only text ever added to the embedded SQL.
func (c *Client) q(ctx context.Context, route, name string) string {
	tag := holdfast.Tag(ctx)
	k := textKey{route, name, tag}
	if s, ok := c.texts.Load(k); ok {
		return s.(string)
	}
	body, ok := c.sql[name]
	if !ok {
		panic("holdfast: no statement " + name)
	}
	s := c.comment(ctx, route) + body
	c.texts.Store(k, s)
	return s
}

// comment is the sqlcommenter comment that attributes a statement to its
// route (and the caller's tag), with a trailing space (sqltext.Prefix).
func (c *Client) comment(ctx context.Context, route string) string {
	tag := holdfast.Tag(ctx)
	return sqltext.Prefix(route, tag)
}

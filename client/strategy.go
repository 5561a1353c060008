package client

import (
	"context"
	"net/http"

	"github.com/holdfast/holdfast"
)

// SetStrategy chooses a key's allocation strategy and, for pool, its cap
// (0: the server's default), as PUT …/strategy does; it needs an admin key.
// Setting the same strategy again is harmless, so a lost response is
// holdfast.ErrUnavailable and the call may be retried.
func (c *Client) SetStrategy(ctx context.Context, k holdfast.Key, s holdfast.Strategy, poolCap int) (*holdfast.Level, error) {
	body := map[string]any{"strategy": string(s)}
	if poolCap != 0 {
		body["pool_cap"] = poolCap
	}
	return c.level(ctx, http.MethodPut, k, "/strategy", body, true)
}

package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

func init() { register(newDropsCmd) }

// newDropsCmd is `holdfast drops set|get`: a key's fair drop, as PUT/GET
// /v1/shops/{shop}/inventory/{item}/{location}/drop do.
func newDropsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drops",
		Short: "set and read a key's drop (a fair lottery window)",
		Long: fmt.Sprintf(`A drop is a lottery window on a key: reservations (with a buyer id) that
reach it in the window enter, one per buyer, and at its end one draw queues
them on the waitlist in HMAC-SHA256(seed, ticket) order. The window is %v
to %v; the seed's SHA-256 is published at once, the seed and the order
after the draw (get prints them).`, holdfast.DropWindowMin, holdfast.DropWindowMax),
		Args: noArgs,
	}
	var dataDir, engine string
	var k holdfast.Key
	common := func(c *cobra.Command) {
		fs := c.Flags()
		dataDirVar(fs, &dataDir)
		fs.StringVar(&engine, "engine", "", "database engine: "+enginePostgres+" or "+engineMySQL+"; empty: from DATABASE_URL (mysql:// selects "+engineMySQL+"), else "+enginePostgres)
		fs.Int64Var(&k.ShopID, "shop", 0, "the shop (required)")
		fs.Int64Var(&k.ItemID, "item", 0, "the item (required)")
		fs.Int64Var(&k.LocationID, "location", 0, "the location (required)")
	}
	names := map[string]string{"shop_id": "shop", "item_id": "item", "location_id": "location", "window": "window", "starts_at": "starts-at"}
	show := func(c *cobra.Command, d *holdfast.Drop) error {
		return json.NewEncoder(c.OutOrStdout()).Encode(wire.FromDrop(d))
	}

	var window time.Duration
	var startsAt string
	set := &cobra.Command{Use: "set --shop N --item I --location L --window 60s [--starts-at RFC3339]", Short: "set a key's drop", Args: noArgs}
	common(set)
	set.Flags().DurationVar(&window, "window", 0, "how long the window stays open (required)")
	set.Flags().StringVar(&startsAt, "starts-at", "", "when it opens, RFC 3339; empty: now")
	set.RunE = func(c *cobra.Command, _ []string) error {
		p := holdfast.DropParams{Key: k, Window: window}
		if startsAt != "" {
			t, err := time.Parse(time.RFC3339Nano, startsAt)
			if err != nil {
				return fmt.Errorf("--starts-at: want an RFC 3339 time such as 2026-12-02T15:04:05Z: %v", err)
			}
			p.StartsAt = t
		}
		if err := p.Validate(time.Now()); err != nil {
			return argUsage(err, names)
		}
		return withEngine(c.Context(), engine, dataDir, func(e holdfast.Engine) error {
			d, err := e.SetDrop(c.Context(), p)
			if err != nil {
				return argUsage(err, names)
			}
			return show(c, d)
		})
	}

	get := &cobra.Command{Use: "get --shop N --item I --location L", Short: "print a key's drop as JSON (seed and entrants once drawn)", Args: noArgs}
	common(get)
	get.RunE = func(c *cobra.Command, _ []string) error {
		return withEngine(c.Context(), engine, dataDir, func(e holdfast.Engine) error {
			d, err := e.Drop(c.Context(), k)
			if err != nil {
				return argUsage(err, names)
			}
			return show(c, d)
		})
	}
	cmd.AddCommand(set, get)
	return cmd
}

package main

import (
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

func init() { register(newStrategyCmd) }

// newStrategyCmd is `holdfast strategy set`: a key's allocation strategy,
// as PUT …/inventory/{item}/{location}/strategy sets it over HTTP.
func newStrategyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "strategy",
		Short: "set a key's allocation strategy (counter, batch, pool or slots)",
		Args:  noArgs,
	}
	set := &cobra.Command{
		Use:   "set --shop N --item N --location N --strategy S [--pool-cap N]",
		Short: "set a key's allocation strategy and, for pool, its cap; prints the key's stock",
		Long: `Set a key's allocation strategy (docs/PERFORMANCE.md says which to use):
counter, batch (the default), pool or slots; MariaDB offers counter, batch
and pool. Buffered units move to the new buffer under the key's lock; holds,
ledger and invariant are unchanged. Prints the key's stock as JSON, as
PUT /v1/shops/{shop}/inventory/{item}/{location}/strategy answers.

It runs on the database behind DATABASE_URL, or the embedded one in
--data-dir (with --engine mariadb: the private MariaDB of the serve running
there), and needs its schema current (it never migrates). A running serve
sees the new strategy within a few seconds.`,
		Args: noArgs,
	}
	var k holdfast.Key
	fs := set.Flags()
	dataDir := dataDirFlag(fs)
	engine := engineFlag(fs)
	fs.Int64Var(&k.ShopID, "shop", 0, "the shop (required)")
	fs.Int64Var(&k.ItemID, "item", 0, "the item (required)")
	fs.Int64Var(&k.LocationID, "location", 0, "the location (required)")
	name := fs.String("strategy", "", "the strategy: "+strategyNames()+" (required)")
	poolCap := fs.Int("pool-cap", 0, "with pool: the key's pool cap; 0: the default")
	set.RunE = func(cmd *cobra.Command, _ []string) error {
		if k.ShopID <= 0 || k.ItemID <= 0 || k.LocationID <= 0 {
			return usageError("--shop, --item and --location are required and positive")
		}
		if *name == "" {
			return usageError("--strategy is required (%s)", strategyNames())
		}
		st, err := parseStrategy(*name)
		if err != nil {
			return err
		}
		if *poolCap < 0 || *poolCap > holdfast.PoolCapLimit {
			return usageError("--pool-cap must be between 0 and %d", holdfast.PoolCapLimit)
		}
		return withEngine(cmd.Context(), *engine, *dataDir, func(e holdfast.Engine) error {
			l, err := e.SetStrategy(cmd.Context(), k, st, *poolCap)
			if err != nil {
				return argUsage(err, map[string]string{"strategy": "strategy", "pool_cap": "pool-cap", "Config.Strategy": "strategy"})
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(wire.FromLevel(l))
		})
	}
	cmd.AddCommand(set)
	return cmd
}

// strategies is every allocation strategy, the list flag help and
// validation draw from.
var strategies = holdfast.Strategies()

// strategyNames is "counter, batch, pool or slots".
func strategyNames() string { return namesOf(strategies) }

// namesOf is "a, b or c".
func namesOf(strategies []holdfast.Strategy) string {
	names := make([]string, len(strategies))
	for i, s := range strategies {
		names[i] = string(s)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// parseStrategy validates a --strategy value; empty is the client's default.
func parseStrategy(s string) (holdfast.Strategy, error) {
	st := holdfast.Strategy(s)
	if s != "" && !st.Valid() {
		return "", usageError("unknown --strategy %q (known: %s)", s, strategyNames())
	}
	return st, nil
}

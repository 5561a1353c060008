package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
)

func init() { register(newPreorderCmd) }

// newPreorderCmd is `holdfast preorder set|get`: a key's pre-order cap and
// expected date, as PUT/GET /v1/shops/{shop}/inventory/{item}/{location}/preorder do.
func newPreorderCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "preorder",
		Short: "set and read a key's pre-order cap (reservations beyond its stock)",
		Long: fmt.Sprintf(`A key with a pre-order cap takes reservations beyond its stock, up to the
cap (held and owed together, at most %d): a short line takes what the key
has and the rest pre-ordered, expected at the date given. Claimed
pre-orders are owed until stock arrives, then converted oldest first.
Cap 0 turns pre-orders off; a cap below what is outstanding is refused.`, holdfast.PreorderCapMax),
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
	names := map[string]string{"shop_id": "shop", "item_id": "item", "location_id": "location", "cap": "cap", "expected_at": "expected"}
	show := func(c *cobra.Command, p *holdfast.Preorder) error {
		return json.NewEncoder(c.OutOrStdout()).Encode(p)
	}

	var cap int
	var expected string
	set := &cobra.Command{Use: "set --shop N --item I --location L --cap C --expected RFC3339", Short: "set (or turn off, --cap 0) a key's pre-orders", Args: noArgs}
	common(set)
	set.Flags().IntVar(&cap, "cap", 0, "units reservations may pre-order beyond the stock (0: off)")
	set.Flags().StringVar(&expected, "expected", "", "when stock is expected, RFC 3339 (required with a positive --cap)")
	set.RunE = func(c *cobra.Command, _ []string) error {
		p := holdfast.Preorder{Key: k, Cap: cap}
		if expected != "" {
			t, err := time.Parse(time.RFC3339Nano, expected)
			if err != nil {
				return fmt.Errorf("--expected: want an RFC 3339 time, e.g. 2027-03-01T12:00:00Z")
			}
			p.ExpectedAt = t
		}
		if err := holdfast.ValidatePreorder(p); err != nil {
			return argUsage(err, names)
		}
		return withEngine(c.Context(), engine, dataDir, func(e holdfast.Engine) error {
			got, err := e.SetPreorder(c.Context(), p)
			if err != nil {
				return argUsage(err, names)
			}
			return show(c, got)
		})
	}

	get := &cobra.Command{Use: "get --shop N --item I --location L", Short: "print a key's pre-order setting and counts as JSON", Args: noArgs}
	common(get)
	get.RunE = func(c *cobra.Command, _ []string) error {
		if err := holdfast.ValidateKey(k); err != nil {
			return argUsage(err, names)
		}
		return withEngine(c.Context(), engine, dataDir, func(e holdfast.Engine) error {
			p, err := e.Preorder(c.Context(), k)
			if err != nil {
				return argUsage(err, names)
			}
			return show(c, p)
		})
	}
	cmd.AddCommand(set, get)
	return cmd
}

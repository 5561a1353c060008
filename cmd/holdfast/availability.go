package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

func init() { register(newAvailabilityCmd) }

// newAvailabilityCmd is `holdfast availability`: what a buyer could
// reserve now, as GET /v1/shops/{shop}/availability answers.
func newAvailabilityCmd() *cobra.Command {
	var q holdfast.AvailabilityQuery
	var dataDir, engine string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "availability --shop N --items 1,2 [--locations 1,2] [--json]",
		Short: "what a buyer could reserve now of some items, per location",
		Long: fmt.Sprintf(`Print what a buyer could reserve now of each item, per location in
allocation order (--locations, or the shop's default location order), as
GET /v1/shops/{shop}/availability answers: available, less safety stock,
less active holds, and nothing at a location with waiters. "total" is what
one allocated line with split could take, "whole" what one without split
could. At most %d items and %d locations. One lock-free read; it writes
nothing.`, holdfast.AvailabilityItemsMax, holdfast.LocationOrderMax),
		Args: noArgs,
	}
	fs := cmd.Flags()
	dataDirVar(fs, &dataDir)
	fs.StringVar(&engine, "engine", "", "database engine: "+enginePostgres+" or "+engineMySQL+"; empty: from DATABASE_URL (mysql:// selects "+engineMySQL+"), else "+enginePostgres)
	fs.Int64Var(&q.ShopID, "shop", 0, "the shop (required)")
	fs.Int64SliceVar(&q.Items, "items", nil, "the items: comma-separated `ids` (required)")
	fs.Int64SliceVar(&q.Locations, "locations", nil, "the locations in allocation order: comma-separated `ids`; empty: the shop's default order")
	fs.BoolVar(&asJSON, "json", false, "print the answer as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		names := map[string]string{"shop_id": "shop"}
		if err := q.Validate(); err != nil {
			return argUsage(err, names)
		}
		return withEngine(cmd.Context(), engine, dataDir, func(e holdfast.Engine) error {
			a, err := e.Availability(cmd.Context(), q)
			if err != nil {
				return argUsage(err, names)
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(wire.FromAvailability(a))
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ITEM\tLOCATION\tSELLABLE\tNOTE")
			for _, it := range a.Items {
				for _, l := range it.Locations {
					var note []string
					if l.Waiters {
						note = append(note, "waiters")
					}
					if l.NotStocked {
						note = append(note, "not stocked")
					}
					fmt.Fprintf(tw, "%d\t%d\t%d\t%s\n", it.ItemID, l.LocationID, l.Sellable, strings.Join(note, ", "))
				}
				fmt.Fprintf(tw, "%d\ttotal\t%d\twhole %d\n", it.ItemID, it.Sellable, it.Whole)
			}
			return tw.Flush()
		})
	}
	return cmd
}

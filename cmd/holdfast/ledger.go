package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

func init() { register(newLedgerCmd) }

func newLedgerCmd() *cobra.Command {
	var f listFlags
	var q holdfast.LedgerQuery
	cmd := &cobra.Command{
		Use:   "ledger --shop N --item N --location N [--cursor C] [--limit N] [--all] [--json]",
		Short: "list a key's ledger (every change of its available stock), newest first",
		Long: `List a key's ledger, newest first, as GET
/v1/shops/{shop}/inventory/{item}/{location}/ledger does: every claim
(reason claim, reference the checkout id) and stock change, with the stock
after it. A page ends with "next: CURSOR" when there is more: pass it to
--cursor, or use --all.`,
		Args: noArgs,
	}
	f.add(cmd.Flags())
	cmd.Flags().Int64Var(&q.ShopID, "shop", 0, "the shop (required)")
	cmd.Flags().Int64Var(&q.ItemID, "item", 0, "the item (required)")
	cmd.Flags().Int64Var(&q.LocationID, "location", 0, "the location (required)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		q.After, q.Limit = f.cursor, f.limit
		names := map[string]string{"shop_id": "shop", "item_id": "item", "location_id": "location"}
		if err := f.check(); err != nil {
			return err
		}
		if _, _, err := q.Validate(); err != nil {
			return argUsage(err, names)
		}
		return withReadEngine(cmd.Context(), &f, func(e holdfast.Engine) error {
			out := cmd.OutOrStdout()
			for {
				p, err := e.Ledger(cmd.Context(), q)
				if err != nil {
					return argUsage(err, names)
				}
				if err := printLedger(out, p, f.json); err != nil {
					return err
				}
				if !f.all || p.Next == "" {
					return nil
				}
				q.After = p.Next
			}
		})
	}
	return cmd
}

func printLedger(w io.Writer, p *holdfast.LedgerPage, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(wire.FromLedgerPage(p)) // the HTTP page's shape
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDELTA\tAVAILABLE AFTER\tREASON\tREFERENCE\tAT")
	for _, e := range p.Entries {
		ref := e.Reference
		if ref == "" {
			ref = "-"
		}
		fmt.Fprintf(tw, "%d\t%+d\t%d\t%s\t%s\t%s\n", e.ID, e.Delta, e.AvailableAfter, e.Reason, ref, e.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.Next != "" {
		_, err := fmt.Fprintf(w, "next: %s\n", p.Next)
		return err
	}
	return nil
}

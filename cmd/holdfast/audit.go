package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
)

func init() {
	register(newAuditCmd)
	register(newCancelHoldsCmd)
}

func newAuditCmd() *cobra.Command {
	var f listFlags
	var q holdfast.AuditQuery
	cmd := &cobra.Command{
		Use:   "audit --shop N [--action A] [--key N] [--cursor C] [--limit N] [--all] [--json]",
		Short: "list a shop's audit log, newest first",
		Long: `List a shop's audit log, newest first, as GET /v1/shops/{shop}/audit does:
every stock change (stock.set, stock.adjust, stock.safety, stock.strategy),
admin cancel (hold.cancel) and API key change (key.create, key.revoke,
key.rotate), with who made it (the key's id and name, or cli / library),
when (the database's clock) and from where (address and request id, over
HTTP). --shop 0 lists the deployment's own entries (admin keys' changes).
Entries are kept for the engine's audit retention (90 days by default).
A page ends with "next: CURSOR" when there is more: pass it to --cursor,
or use --all.`,
		Args: noArgs,
	}
	f.add(cmd.Flags())
	cmd.Flags().Int64Var(&q.ShopID, "shop", 0, "the shop (required; 0: the deployment's own entries)")
	cmd.Flags().StringVar(&q.Action, "action", "", "only entries of this action (stock.set, hold.cancel, key.create, …)")
	cmd.Flags().Int64Var(&q.KeyID, "key", 0, "only entries made with this API key id")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if !cmd.Flags().Changed("shop") {
			return usageError("--shop is required")
		}
		q.After, q.Limit = f.cursor, f.limit
		names := map[string]string{"shop_id": "shop", "key_id": "key"}
		if err := f.check(); err != nil {
			return err
		}
		if _, _, err := q.Validate(); err != nil {
			return argUsage(err, names)
		}
		return withReadEngine(cmd.Context(), &f, func(e holdfast.Engine) error {
			out := cmd.OutOrStdout()
			for {
				p, err := e.Audit(cmd.Context(), q)
				if err != nil {
					return argUsage(err, names)
				}
				if err := printAudit(out, p, f.json); err != nil {
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

func printAudit(w io.Writer, p *holdfast.AuditPage, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(p) // the HTTP page's shape
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAT\tACTION\tWHO\tFROM\tDETAIL")
	for _, e := range p.Entries {
		who := e.Actor
		if e.KeyID != 0 {
			who += " (key " + strconv.FormatInt(e.KeyID, 10) + ")"
		}
		from := strings.TrimSpace(e.Remote + " " + e.RequestID)
		if from == "" {
			from = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"), e.Action, who, from, compactJSON(e.Detail))
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

// compactJSON is b on one line.
func compactJSON(b json.RawMessage) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func newCancelHoldsCmd() *cobra.Command {
	var f listFlags
	var p holdfast.CancelParams
	var olderThan time.Duration
	cmd := &cobra.Command{
		Use:   "cancel-holds --shop N --reason R [--item N] [--location N] [--buyer ID] [--older-than D] [--limit N] [--all] [--json]",
		Short: "cancel a shop's held holds in bulk, as an admin",
		Long: `Cancel a shop's held holds, as POST /v1/shops/{shop}/holds/cancel does:
those matching every filter given (--item, --location, --buyer, --older-than;
at least one), each released as a release would (units back, events,
webhooks) and recorded in the audit log with --reason and "cli" as who.
At most --limit holds a call (default 100); "next: CURSOR" says held
holds remain unexamined: pass it to --cursor, or use --all. Safe to run
again: holds that already ended are skipped.`,
		Args: noArgs,
	}
	f.add(cmd.Flags())
	cmd.Flags().Int64Var(&p.ShopID, "shop", 0, "the shop (required)")
	cmd.Flags().StringVar(&p.Reason, "reason", "", "why (required; recorded in the audit log)")
	cmd.Flags().Int64Var(&p.ItemID, "item", 0, "only holds with a line on this item")
	cmd.Flags().Int64Var(&p.LocationID, "location", 0, "only holds with a line at this location")
	cmd.Flags().StringVar(&p.BuyerID, "buyer", "", "only holds reserved with this buyer id")
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "only holds created more than this long ago (e.g. 2h)")
	f.limit = holdfast.CancelLimitDefault
	cmd.Flags().Lookup("limit").DefValue = strconv.Itoa(holdfast.CancelLimitDefault)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		p.OlderThan, p.After, p.Limit = olderThan, f.cursor, f.limit
		names := map[string]string{"shop_id": "shop", "item_id": "item", "location_id": "location", "buyer_id": "buyer", "older_than": "older-than", "filter": "item/--location/--buyer/--older-than"}
		if _, err := p.Validate(); err != nil {
			return argUsage(err, names)
		}
		return withReadEngine(cmd.Context(), &f, func(e holdfast.Engine) error {
			out := cmd.OutOrStdout()
			for {
				r, err := e.CancelHolds(cmd.Context(), p)
				if err != nil {
					return argUsage(err, names)
				}
				if f.json {
					if err := json.NewEncoder(out).Encode(r); err != nil {
						return err
					}
				} else {
					for _, c := range r.Cancelled {
						fmt.Fprintf(out, "cancelled %s\n", c.CheckoutID)
					}
					for _, u := range r.Units {
						fmt.Fprintf(out, "units back: %d×%d@%d\n", u.Units, u.ItemID, u.LocationID)
					}
					if r.More {
						fmt.Fprintf(out, "next: %s\n", r.Next)
					}
				}
				if !f.all || !r.More {
					return nil
				}
				p.After = r.Next
			}
		})
	}
	return cmd
}

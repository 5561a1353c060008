package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/wire"
)

func init() { register(newHoldsCmd) }

// listFlags are the flags holds and ledger share.
type listFlags struct {
	dataDir string
	engine  string
	cursor  string
	limit   int
	all     bool
	json    bool
}

func (f *listFlags) add(fs *pflag.FlagSet) {
	dataDirVar(fs, &f.dataDir)
	fs.StringVar(&f.engine, "engine", "", "database engine: "+enginePostgres+" or "+engineMySQL+"; empty: from DATABASE_URL (mysql:// selects "+engineMySQL+"), else "+enginePostgres)
	fs.StringVar(&f.cursor, "cursor", "", "start after this cursor (the next: line of the previous page)")
	fs.IntVar(&f.limit, "limit", holdfast.ListLimitDefault, fmt.Sprintf("page size, 1 to %d", holdfast.ListLimitMax))
	fs.BoolVar(&f.all, "all", false, "follow the cursor to the last page")
	fs.BoolVar(&f.json, "json", false, "print each page as one JSON object per line")
}

// check rejects a page size the engine would take as its default (0).
func (f *listFlags) check() error {
	if f.limit < 1 || f.limit > holdfast.ListLimitMax {
		return usageError("--limit: must be between 1 and %d", holdfast.ListLimitMax)
	}
	return nil
}

// argUsage turns an engine's *ArgumentError about a query into a usage
// error naming the command's flag.
func argUsage(err error, flags map[string]string) error {
	var ae *holdfast.ArgumentError
	if !errors.As(err, &ae) {
		return err
	}
	name, ok := flags[ae.Field]
	if !ok {
		name = ae.Field
	}
	return usageError("--%s: %s", name, ae.Reason)
}

// withReadEngine opens the engine a read-only command runs on: the
// PostgreSQL database (DATABASE_URL, or the embedded cluster in --data-dir,
// which must exist) or MySQL/MariaDB (a mysql:// DATABASE_URL, or the
// private MariaDB of the serve running with --data-dir). It never
// migrates: a missing or outdated schema is a one-line error saying so.
func withReadEngine(ctx context.Context, f *listFlags, fn func(holdfast.Engine) error) error {
	return withEngine(ctx, f.engine, f.dataDir, fn)
}

// withEngine runs fn on the engine of --engine and --data-dir (or
// DATABASE_URL), as withReadEngine describes: it never migrates.
func withEngine(ctx context.Context, engineFlag, dataDir string, fn func(holdfast.Engine) error) error {
	eng, err := resolveEngine(engineFlag)
	if err != nil {
		return err
	}
	if eng == engineMySQL {
		d, err := openServedMySQL(ctx, dataDir)
		if err != nil {
			return err
		}
		defer d.Close()
		if err := d.requireSchema(ctx); err != nil {
			return err
		}
		c, err := d.client(2, holdfast.Config{})
		if err != nil {
			return err
		}
		defer c.DB().Close()
		return fn(c)
	}
	db, err := openDatabase(ctx, existing, dataDir, stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	pool, err := db.pool(ctx, 2, "holdfast-read")
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := requireSchema(ctx, pool); err != nil {
		return err
	}
	c, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		return err
	}
	return fn(c)
}

func newHoldsCmd() *cobra.Command {
	var f listFlags
	var q holdfast.HoldQuery
	var status string
	cmd := &cobra.Command{
		Use:   "holds --shop N [--item N] [--location N] [--status held|claimed|released|expired] [--cursor C] [--limit N] [--all] [--json]",
		Short: "list a shop's holds and outcomes, newest first",
		Long: `List a shop's holds and their outcomes (kept 24 h after they end), newest
first, as GET /v1/shops/{shop}/holds does: --item and --location keep the
holds with such a line, --status those in that status (a hold past its
expiry that is not swept yet is expired). A page ends with "next: CURSOR"
when there is more: pass it to --cursor, or use --all.`,
		Args: noArgs,
	}
	f.add(cmd.Flags())
	cmd.Flags().Int64Var(&q.ShopID, "shop", 0, "the shop (required)")
	cmd.Flags().Int64Var(&q.ItemID, "item", 0, "only holds with a line on this item")
	cmd.Flags().Int64Var(&q.LocationID, "location", 0, "only holds with a line at this location")
	cmd.Flags().StringVar(&status, "status", "", "only holds in this status: held, claimed, released or expired")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		q.Status, q.After, q.Limit = holdfast.Status(status), f.cursor, f.limit
		names := map[string]string{"shop_id": "shop", "item_id": "item", "location_id": "location"}
		if err := f.check(); err != nil {
			return err
		}
		if q.ItemID == 0 && cmd.Flags().Changed("item") || q.LocationID == 0 && cmd.Flags().Changed("location") {
			return usageError("--item and --location must be positive")
		}
		if _, _, err := q.Validate(); err != nil {
			return argUsage(err, names)
		}
		return withReadEngine(cmd.Context(), &f, func(e holdfast.Engine) error {
			out := cmd.OutOrStdout()
			for {
				p, err := e.Holds(cmd.Context(), q)
				if err != nil {
					return argUsage(err, names)
				}
				if err := printHolds(out, p, f.json); err != nil {
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

func printHolds(w io.Writer, p *holdfast.HoldPage, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(wire.FromHoldPage(p)) // the HTTP page's shape
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECKOUT\tSTATUS\tLINES\tCREATED\tEXPIRES\tENDED")
	for _, h := range p.Holds {
		status := string(h.Status)
		if h.Status == holdfast.StatusExpired && h.Claimable {
			status += " (claimable)"
		}
		lines := make([]string, len(h.Lines))
		for i, l := range h.Lines {
			lines[i] = fmt.Sprintf("%d×%d@%d", l.Quantity, l.ItemID, l.LocationID)
		}
		ended := "-"
		if h.EndedAt != nil {
			ended = h.EndedAt.UTC().Format("2006-01-02T15:04:05.000Z")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", h.CheckoutID, status, strings.Join(lines, ","),
			h.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"), h.ExpiresAt.UTC().Format("2006-01-02T15:04:05.000Z"), ended)
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

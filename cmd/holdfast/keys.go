package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/migrate"
)

func init() {
	register(&command{name: "keys", summary: "create, revoke and list API keys of holdfast serve", run: runKeys})
}

const keysUsage = `usage:
  holdfast keys create --shop N     a key that reaches shop N only
  holdfast keys create --admin      a key that reaches every shop
  holdfast keys revoke <id or key>
  holdfast keys list [--limit N]
The new key is printed once, alone on the last line of stdout; only its hash is stored.
With the embedded database, run keys while serve is stopped, or point DATABASE_URL at
the URL serve logs.`

func runKeys(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: a subcommand is required\n%s", errUsage, keysUsage)
	}
	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	dataDir := fs.String("data-dir", defaultDataDir, "embedded cluster directory, when DATABASE_URL is unset")
	shop := fs.Int64("shop", 0, "create: the shop the key reaches")
	admin := fs.Bool("admin", false, "create: a key that reaches every shop")
	limit := fs.Int("limit", 100, "list: at most this many keys, newest first")
	fs.Usage = func() { fmt.Fprintln(os.Stderr, keysUsage); fs.PrintDefaults() }
	sub := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch sub {
	case "create":
		if *admin == (*shop != 0) || *shop < 0 || fs.NArg() > 0 {
			return fmt.Errorf("%w: keys create needs exactly one of --shop N (N > 0) or --admin", errUsage)
		}
	case "revoke":
		if fs.NArg() != 1 {
			return fmt.Errorf("%w: keys revoke needs one key id or key", errUsage)
		}
	case "list":
		if fs.NArg() > 0 || *limit < 1 || *limit > 100_000 {
			return fmt.Errorf("%w: keys list takes --limit between 1 and 100000", errUsage)
		}
	default:
		return fmt.Errorf("%w: unknown subcommand %q\n%s", errUsage, sub, keysUsage)
	}

	db, err := openDatabase(ctx, persistent, *dataDir, stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	pool, err := db.pool(ctx, 2, "holdfast-keys")
	if err != nil {
		return err
	}
	defer pool.Close()
	// The keys table comes with the schema; a first `keys create` on a
	// fresh database applies it, as serve would.
	if _, err := migrate.Up(ctx, pool); err != nil {
		return err
	}

	switch sub {
	case "create":
		key, rec, err := httpapi.CreateKey(ctx, pool, *shop, *admin)
		if err != nil {
			return err
		}
		scope := fmt.Sprintf("shop %d", rec.ShopID)
		if rec.Admin {
			scope = "every shop (admin)"
		}
		fmt.Printf("created key %d for %s; it is shown this once, only its hash is stored:\n%s\n", rec.ID, scope, key)
	case "revoke":
		id, err := httpapi.RevokeKey(ctx, pool, fs.Arg(0))
		if errors.Is(err, httpapi.ErrKeyNotFound) {
			return &exitError{code: 1, msg: "no live key matches " + redact(fs.Arg(0))}
		}
		if err != nil {
			return err
		}
		fmt.Printf("revoked key %d (servers stop accepting it within %v)\n", id, httpapi.KeyCacheTTLDefault)
	case "list":
		keys, err := httpapi.ListKeys(ctx, pool, *limit)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSCOPE\tCREATED\tREVOKED")
		for _, k := range keys {
			scope := fmt.Sprintf("shop %d", k.ShopID)
			if k.Admin {
				scope = "admin"
			}
			revoked := "-"
			if k.RevokedAt != nil {
				revoked = k.RevokedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", k.ID, scope, k.CreatedAt.UTC().Format(time.RFC3339), revoked)
		}
		return tw.Flush()
	}
	return nil
}

// redact keeps a key out of error output: only its first characters.
func redact(s string) string {
	if len(s) > 8 {
		return s[:8] + "…"
	}
	return s
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/webhook"
)

func init() { register(newWebhooksCmd) }

func newWebhooksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhooks",
		Short: "register, list and remove the webhook endpoints holdfast serve delivers a shop's events to",
		Long: `Register, list and remove the webhook endpoints holdfast serve delivers a
shop's events to (docs/API.md, "Events and webhooks"), and list dead letters.

A new endpoint's signing secret is printed once, alone on the last line of
stdout. With the embedded database, webhooks uses the cluster in --data-dir,
the running server's when serve runs (with --engine mariadb: the private
MariaDB of the serve --engine mariadb running there).

webhooks add applies the schema to a fresh database, as serve and migrate
do; list, remove and dead-letters never change the schema: on a database
without it they say to run holdfast migrate.`,
		Args: noArgs,
	}
	dataDir := dataDirFlag(cmd.PersistentFlags())
	engine := engineFlag(cmd.PersistentFlags())
	shop := cmd.PersistentFlags().Int64("shop", 0, "the shop; required by add, list, remove and dead-letters (receive takes none)")
	needShop := func() error {
		if *shop <= 0 {
			return usageError("--shop N (N > 0) is required")
		}
		return nil
	}

	add := &cobra.Command{Use: "add --shop N --url URL [--after CURSOR]", Short: "register an http(s) endpoint; prints its secret once", Args: noArgs}
	u := add.Flags().String("url", "", "the endpoint's http:// or https:// URL")
	var hookFlags webhookFlags
	webhookFlagsVar(add.Flags(), &hookFlags, false)
	after := add.Flags().Int64("after", -1, "deliver the events after this cursor (default: only events from now on)")
	add.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := needShop(); err != nil {
			return err
		}
		if err := webhook.ValidateURL(*u); err != nil {
			return usageError("--url: %s", argReason(err))
		}
		var from *int64
		if cmd.Flags().Changed("after") {
			if *after < 0 {
				return usageError("--after must not be negative")
			}
			from = after
		}
		// The key is never created here: one of its own would seal a
		// secret the serve that delivers cannot read. It is checked before
		// the database is touched, unless there is no database either (no
		// DATABASE_URL, no --data-dir): that is named first.
		opts, keyErr := hookFlags.options(*dataDir, false)
		if _, err := hookFlags.networks(); err != nil {
			return err
		}
		if _, err := os.Stat(*dataDir); keyErr != nil && (os.Getenv("DATABASE_URL") != "" || err == nil) {
			return keyErr
		}
		return withRegistry(cmd.Context(), *engine, existing, *dataDir, setsUpSchema, webhook.Options{}, func(ctx context.Context, reg *webhook.Registry) error {
			if keyErr != nil {
				return keyErr
			}
			reg = reg.With(opts)
			ep, err := reg.Add(ctx, *shop, *u, from)
			if errors.Is(err, webhook.ErrTooMany) {
				return &exitError{code: 1, msg: fmt.Sprintf("shop %d has %d endpoints, the most allowed; remove one first", *shop, webhook.EndpointsPerShopMax)}
			}
			if ae := (*holdfast.ArgumentError)(nil); errors.As(err, &ae) && ae.Field == "url" {
				return refusedURL(ae.Reason)
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "registered webhook %d for shop %d: %s, after cursor %d; its signing secret is shown this once:\n%s\n",
				ep.ID, ep.ShopID, ep.URL, ep.Cursor, ep.Secret)
			return err
		})
	}

	list := &cobra.Command{Use: "list --shop N", Short: "list a shop's endpoints and their delivery state", Args: noArgs}
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := needShop(); err != nil {
			return err
		}
		return withRegistry(cmd.Context(), *engine, existing, *dataDir, readsSchema, webhook.Options{}, func(ctx context.Context, reg *webhook.Registry) error {
			eps, err := reg.List(ctx, *shop)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tURL\tCURSOR\tATTEMPTS\tDEAD LETTERS\tLAST ERROR")
			for _, ep := range eps {
				fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%s\n", ep.ID, ep.URL, ep.Cursor, ep.Attempts, ep.DeadLetters, ep.LastError)
			}
			return tw.Flush()
		})
	}

	remove := &cobra.Command{
		Use: "remove --shop N ID", Short: "remove an endpoint and its dead letters",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("webhooks remove needs one endpoint id")
			}
			return nil
		},
	}
	remove.RunE = func(cmd *cobra.Command, args []string) error {
		if err := needShop(); err != nil {
			return err
		}
		id, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil || id <= 0 {
			return usageError("the endpoint id must be a positive integer")
		}
		return withRegistry(cmd.Context(), *engine, existing, *dataDir, readsSchema, webhook.Options{}, func(ctx context.Context, reg *webhook.Registry) error {
			ep, err := reg.Remove(ctx, *shop, id)
			if errors.Is(err, webhook.ErrNotFound) {
				return &exitError{code: 1, msg: fmt.Sprintf("shop %d has no webhook %d", *shop, id)}
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "removed webhook %d (%s)\n", ep.ID, ep.URL)
			return err
		})
	}

	dead := &cobra.Command{Use: "dead-letters --shop N [--limit N]", Short: "list events endpoints did not accept within the retry horizon", Args: noArgs}
	limit := dead.Flags().Int("limit", 20, "most dead letters, newest first")
	dead.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := needShop(); err != nil {
			return err
		}
		if *limit < 1 || *limit > webhook.DeadLettersLimitMax {
			return usageError("--limit must be between 1 and %d", webhook.DeadLettersLimitMax)
		}
		return withRegistry(cmd.Context(), *engine, existing, *dataDir, readsSchema, webhook.Options{}, func(ctx context.Context, reg *webhook.Registry) error {
			dls, err := reg.DeadLetters(ctx, *shop, *limit)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ENDPOINT\tCURSOR\tATTEMPTS\tDEAD AT\tLAST ERROR")
			for _, d := range dls {
				fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\n", d.EndpointID, d.Cursor, d.Attempts, d.DeadAt.Format(time.RFC3339), d.LastError)
			}
			return tw.Flush()
		})
	}
	receive := &cobra.Command{
		Use:   "receive [--addr HOST:PORT] [--secret-file FILE]",
		Short: "a test receiver: verifies each delivery's signature and prints the event",
		Long: `A receiver for trying webhooks out. It listens on --addr (port 0: any free
port), prints its URL on the first line, then verifies each delivery's
Holdfast-Signature with the endpoint's secret — read from --secret-file at
each request (so it can be written after the endpoint is registered), else
$HOLDFAST_WEBHOOK_SECRET — and prints "<cursor> <type> <checkout or key>
(signature verified)" for each event it accepts. A delivery that does not
verify, or is older than 5 minutes, gets 401; before there is a secret, 503
(the sender retries).`,
		Args: noArgs,
	}
	addr := receive.Flags().String("addr", "127.0.0.1:0", "listen address")
	secretFile := receive.Flags().String("secret-file", "", "a file holding the endpoint's secret (default: $HOLDFAST_WEBHOOK_SECRET)")
	receive.RunE = func(cmd *cobra.Command, _ []string) error {
		secret := func() string {
			if *secretFile == "" {
				return os.Getenv("HOLDFAST_WEBHOOK_SECRET")
			}
			b, _ := os.ReadFile(*secretFile)
			return strings.TrimSpace(string(b))
		}
		ln, err := listen(*addr, "--addr")
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		var mu sync.Mutex
		fmt.Fprintf(out, "http://%s/holdfast\n", ln.Addr())
		srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				http.Error(w, "cannot read the body", http.StatusBadRequest)
				return
			}
			sec := secret()
			if sec == "" {
				http.Error(w, "no secret yet", http.StatusServiceUnavailable)
				return
			}
			if err := webhook.Verify(sec, r.Header.Get(webhook.SignatureHeader), body, time.Now(), 0); err != nil {
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
			var ev holdfast.Event
			if err := json.Unmarshal(body, &ev); err != nil {
				http.Error(w, "not an event", http.StatusBadRequest)
				return
			}
			what := fmt.Sprintf("item %d location %d", ev.ItemID, ev.LocationID)
			if ev.CheckoutID != nil {
				what = "checkout " + ev.CheckoutID.String()
			}
			mu.Lock()
			fmt.Fprintf(out, "%d %s %s (signature verified)\n", ev.Cursor, ev.Type, what)
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		})}
		go func() {
			<-cmd.Context().Done()
			_ = srv.Close()
		}()
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
	cmd.AddCommand(add, list, remove, dead, receive)
	return cmd
}

// argReason is an *holdfast.ArgumentError's reason, else the error.
// refusedURL is webhooks add's one line for a destination the network
// rules refuse: no doubled "holdfast:" prefix, and its own flag named.
func refusedURL(reason string) error {
	reason, refused := strings.CutSuffix(reason, " (holdfast serve --webhook-allow-networks allows networks)")
	if refused {
		reason += "; webhooks add --webhook-allow-networks (and serve's, for deliveries) allows such networks, e.g. 127.0.0.0/8"
	}
	return &exitError{code: 1, msg: "--url: " + reason}
}

func argReason(err error) string {
	var ae *holdfast.ArgumentError
	if errors.As(err, &ae) {
		return ae.Reason
	}
	return err.Error()
}

// startWebhooks makes serve's webhook delivery pool: its own small
// database pool for the registry, the engine's feed. Serve starts and
// stops it with its other workers.
func startWebhooks(ctx context.Context, db *database, engine webhook.Events, opts webhook.Options, log *slog.Logger) (*webhook.Deliverer, func(), error) {
	pool, err := db.pool(ctx, 2, "holdfast-webhooks")
	if err != nil {
		return nil, nil, err
	}
	d, err := webhook.NewDeliverer(webhook.Config{Store: pgstore.Webhooks(pool), Events: engine, Logger: log, Options: opts})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return d, pool.Close, nil
}

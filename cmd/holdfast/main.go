// Command holdfast runs and operates holdfast: inventory reservations on
// PostgreSQL. Each subcommand lives in its own file and registers itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// errUsage marks a usage error: exit status 2.
var errUsage = errors.New("usage")

// exitError carries a chosen exit status (doctor: critical findings).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usage() {
	fmt.Fprintln(os.Stderr, "holdfast: inventory reservations on PostgreSQL\n\nUsage: holdfast <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun `holdfast <command> -h` for a command's flags. DATABASE_URL selects the database;\nunset, holdfast runs on a private PostgreSQL cluster from the local server binaries.")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		os.Exit(2)
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "holdfast: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := cmd.run(ctx, os.Args[2:])
	var ee *exitError
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "holdfast "+cmd.name+":", err)
		os.Exit(2)
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, "holdfast "+cmd.name+":", ee.msg)
		}
		os.Exit(ee.code)
	default:
		fmt.Fprintln(os.Stderr, "holdfast "+cmd.name+":", err)
		os.Exit(1)
	}
}

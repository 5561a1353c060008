// Package servetest runs the built `holdfast` binary: `serve` with its
// flags, environment, migrations and signal handling, and `keys`.
package servetest

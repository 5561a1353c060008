// Package pgstore is what holdfast's service keeps in PostgreSQL beside the
// engine's tables, behind the small store interfaces the neutral packages
// define: the webhook registry's endpoints and dead letters
// (webhook.Store), the API keys and the console's reads (httpapi.Store) and
// the shadow layer's records (shadow.Store). Every statement that writes
// holdfast's tables outside package postgres is here, in sql/.
//
// Its twin for MySQL/MariaDB is package mysql/mysqlstore; cmd/holdfast
// picks one by --engine and hands it to the service.
package pgstore

import (
	"embed"

	"github.com/holdfast/holdfast/internal/sqltext"
)

//go:embed sql/*/*.sql
var sqlFiles embed.FS

var (
	webhookStatements = sqltext.Load("pgstore", sqlFiles, "sql/webhook")
	serviceStatements = sqltext.Load("pgstore", sqlFiles, "sql/service")
)

// serviceStmt returns an embedded statement of the HTTP service's store
// with its sqlcommenter comment, tagged with what it serves (auth, keys,
// console).
func serviceStmt(tag, name string) string { return serviceStatements.Tagged(tag, name) }

// webhookStmt returns an embedded webhook statement with its sqlcommenter
// comment (tagged "webhooks", as the activity sampler groups them).
func webhookStmt(name string) string { return webhookStatements.Tagged("webhooks", name) }

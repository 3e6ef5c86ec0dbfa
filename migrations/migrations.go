// Package migrations holds the SQL schema, embedded in the binary and applied at start.
package migrations

import "embed"

// FS holds the numbered goose migrations.
//
//go:embed *.sql
var FS embed.FS

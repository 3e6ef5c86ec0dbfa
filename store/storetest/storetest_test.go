package storetest

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestDatabaseURL: a test database is reached as the admin database is,
// password and parameters included, whatever form TEST_DATABASE_URL takes.
func TestDatabaseURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, admin, want string
	}{
		{"URLWithPassword", "postgres://rounds:p%40ss%20word@db.test:5433/postgres?sslmode=require&application_name=ci",
			"postgres://rounds:p%40ss%20word@db.test:5433/rounds_test_1?sslmode=require&application_name=ci"},
		{"PostgresqlScheme", "postgresql://rounds:secret@db.test/postgres", "postgresql://rounds:secret@db.test/rounds_test_1"},
		{"NoDatabase", "postgres://rounds:secret@db.test:5433", "postgres://rounds:secret@db.test:5433/rounds_test_1"},
		{"KeywordValue", "host=db.test port=5433 user=rounds password='p ss' dbname=postgres sslmode=require",
			"host=db.test port=5433 user=rounds password='p ss' dbname=postgres sslmode=require dbname=rounds_test_1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DatabaseURL(tt.admin, "rounds_test_1")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("DatabaseURL = %s\nwant %s", got, tt.want)
			}
			admin, err := pgx.ParseConfig(tt.admin)
			if err != nil {
				t.Fatal(err)
			}
			test, err := pgx.ParseConfig(got)
			if err != nil {
				t.Fatal(err)
			}
			if test.Database != "rounds_test_1" {
				t.Errorf("database = %q", test.Database)
			}
			if test.User != admin.User || test.Password != admin.Password || test.Host != admin.Host || test.Port != admin.Port ||
				(test.TLSConfig == nil) != (admin.TLSConfig == nil) || test.RuntimeParams["application_name"] != admin.RuntimeParams["application_name"] {
				t.Errorf("connects as %s:%q@%s:%d (TLS %v, %v), want as %s:%q@%s:%d (TLS %v, %v)",
					test.User, test.Password, test.Host, test.Port, test.TLSConfig != nil, test.RuntimeParams,
					admin.User, admin.Password, admin.Host, admin.Port, admin.TLSConfig != nil, admin.RuntimeParams)
			}
		})
	}
}

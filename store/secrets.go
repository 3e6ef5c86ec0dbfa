package store

import (
	"context"
	"crypto/rand"
)

// Secret returns the named secret, generating it on first use. Every
// instance gets the same bytes, with no configuration.
func (s *Store) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	fresh := make([]byte, size)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	var value []byte
	err := s.pool.QueryRow(ctx, `
		with ins as (
			insert into secrets (name, value) values ($1, $2)
			on conflict (name) do nothing returning value
		)
		select value from ins union all select value from secrets where name = $1
		limit 1`, name, fresh).Scan(&value)
	return value, err
}

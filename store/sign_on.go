package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// SignOn is what an identity provider says of a person at sign-in.
type SignOn struct {
	Issuer, Subject string
	// Name is the name the account gets when sign-on makes it; a taken
	// name gets a number.
	Name  string
	Email string
	// EmailVerified is the provider's email_verified: only then is the
	// address trusted to find the person in Slack.
	EmailVerified bool
	// Groups are those of the person's groups that map to teams: they join
	// the teams named like them.
	Groups []string
	// Admin is whether the groups make them an admin.
	Admin bool
	// Grant is what lets Rounds ask the provider again (a refresh token),
	// kept encrypted; Recheck is how soon it asks (OIDC_RECHECK).
	Grant   string
	Recheck time.Duration
}

// ErrAccountDisabled refuses a sign-on into a disabled account.
var ErrAccountDisabled = &Error{Kind: ErrInvalid, Message: "This account is disabled. Ask an administrator."}

// SignOnUser finds the account of an identity by its issuer and subject,
// making it on the first sign-in, and brings it in step with what the
// provider said: its e-mail, its admin rights, and the teams its groups
// name. Teams an admin added the person to by hand stay. The grant is
// kept for the checks to come (SignOnCheck), the first one so.Recheck
// from now, and tokens stopped by a refused check work again.
func (s *Store) SignOnUser(ctx context.Context, so SignOn) (*User, error) {
	grant, err := s.sealGrant(so.Issuer, so.Subject, so.Grant)
	if err != nil {
		return nil, err
	}
	var u *User
	var adminChanged bool
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `select user_id from user_identities where issuer = $1 and subject = $2`,
			so.Issuer, so.Subject).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			id, err = linkProvisionedTx(ctx, tx, so)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			id, err = createSignOnUserTx(ctx, tx, so, signOnEmail(so))
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `update user_identities set last_sign_in_at = clock_timestamp(), grant_enc = $2,
				check_due_at = now() + make_interval(secs => $3), checked_at = now(), refused_at = null
			where user_id = $1`, id, grant, so.Recheck.Seconds()); err != nil {
			return err
		}
		u, adminChanged, err = applySignOnTx(ctx, tx, id, so)
		if err == nil && u.Disabled {
			return ErrAccountDisabled
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if adminChanged {
		s.authChanged(ctx) // every instance's next page shows it
	}
	return u, nil
}

// signOnEmail is the address the provider has for the person, or "" when
// it is one we cannot mail.
func signOnEmail(so SignOn) string {
	email, err := CheckEmail(so.Email)
	if err != nil {
		return ""
	}
	return email
}

// applySignOnTx brings an account in step with what its provider says: its
// e-mail, its admin rights and the teams its groups name. It says whether
// the admin rights changed, which every instance must hear of.
func applySignOnTx(ctx context.Context, tx pgx.Tx, id int64, so SignOn) (*User, bool, error) {
	var adminChanged bool
	if err := tx.QueryRow(ctx, `select is_admin <> $2 from users where id = $1 for update`, id, so.Admin).Scan(&adminChanged); err != nil {
		return nil, false, err
	}
	rows, _ := tx.Query(ctx, `update users set is_admin = $2,
			email = case when $3 <> '' then $3 else email end,
			email_trusted = case when $3 <> '' then $4 else email_trusted end, updated_at = now()
		where id = $1 returning `+userColumns, id, so.Admin, signOnEmail(so), so.EmailVerified)
	u, err := pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[User])
	if err != nil {
		return nil, false, err
	}
	groups := make([]string, len(so.Groups))
	for i, g := range so.Groups {
		groups[i] = strings.ToLower(g)
	}
	if _, err := tx.Exec(ctx, `insert into team_members (team_id, user_id, by_sign_on)
		select t.id, $1, true from teams t where lower(t.name) = any($2) on conflict do nothing`, id, groups); err != nil {
		return nil, false, err
	}
	_, err = tx.Exec(ctx, `delete from team_members m using teams t
		where m.team_id = t.id and m.user_id = $1 and m.by_sign_on and not lower(t.name) = any($2)`, id, groups)
	return u, adminChanged, err
}

// linkProvisionedTx finds the account a provider provisioned (SCIM) for
// this identity, by the externalId it gave being the identity's subject,
// and records the identity for it; pgx.ErrNoRows when there is none. It
// links only when exactly one provisioned person has that externalId
// (it is unique, and this does not rest on it alone).
func linkProvisionedTx(ctx context.Context, tx pgx.Tx, so SignOn) (int64, error) {
	rows, _ := tx.Query(ctx, `select p.user_id, exists (select 1 from user_identities i where i.user_id = p.user_id) as linked
		from scim_users p where p.external_id = $1 limit 2`, so.Subject)
	type match struct {
		UserID int64 `db:"user_id"`
		Linked bool  `db:"linked"`
	}
	found, err := pgx.CollectRows(rows, pgx.RowToStructByName[match])
	if err != nil {
		return 0, err
	}
	if len(found) != 1 || found[0].Linked {
		return 0, pgx.ErrNoRows
	}
	id := found[0].UserID
	_, err = tx.Exec(ctx, `insert into user_identities (issuer, subject, user_id) values ($1, $2, $3)`, so.Issuer, so.Subject, id)
	return id, err
}

// createSignOnUserTx makes the account of a first sign-on, under the
// provider's name for the person made fit and unique.
func createSignOnUserTx(ctx context.Context, tx pgx.Tx, so SignOn, email string) (int64, error) {
	id, err := insertUserNamedTx(ctx, tx, so.Name, email)
	if err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, `insert into user_identities (issuer, subject, user_id) values ($1, $2, $3)`,
		so.Issuer, so.Subject, id)
	return id, translate(err, "identity")
}

var notInName = regexp.MustCompile(`[^A-Za-z0-9._@-]+`)

// SignOnName turns what a provider calls a person into an account name:
// letters, digits and . _ @ -, starting with a letter or digit, at most 64.
func SignOnName(name string) string {
	name = notInName.ReplaceAllString(strings.TrimSpace(name), "-")
	name = strings.TrimLeft(name, "._@-")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		return "user"
	}
	return name
}

// SignOnIssuers names the identity provider of each account made by
// sign-on, by user id; accounts with a password are not listed.
func (s *Store) SignOnIssuers(ctx context.Context) (map[int64]string, error) {
	rows, _ := s.pool.Query(ctx, `select user_id, issuer from user_identities`)
	out := map[int64]string{}
	var id int64
	var issuer string
	_, err := pgx.ForEachRow(rows, []any{&id, &issuer}, func() error {
		out[id] = issuer
		return nil
	})
	return out, err
}

// SignOnIssuer names the identity provider of an account made by
// sign-on; "" for any other account.
func (s *Store) SignOnIssuer(ctx context.Context, userID int64) (string, error) {
	var issuer string
	err := s.pool.QueryRow(ctx, `select issuer from user_identities where user_id = $1`, userID).Scan(&issuer)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return issuer, err
}

// SignOnTeams lists the teams a person joined through sign-on, by name.
func (s *Store) SignOnTeams(ctx context.Context, userID int64) ([]string, error) {
	rows, _ := s.pool.Query(ctx, `select t.name from team_members m join teams t on t.id = m.team_id
		where m.user_id = $1 and m.by_sign_on order by t.name`, userID)
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// SetSessionIDToken keeps the ID token a sign-on session began with, for
// the provider's sign-out.
func (s *Store) SetSessionIDToken(ctx context.Context, sessionSecret, idToken string) error {
	sum := sessionHash(sessionSecret)
	_, err := s.pool.Exec(ctx, `update sessions set id_token = $2 where secret_hash = $1`, sum[:], idToken)
	return err
}

// SessionIDToken returns the ID token a session began with; "" for a
// session begun with a password.
func (s *Store) SessionIDToken(ctx context.Context, sessionSecret string) (string, error) {
	sum := sessionHash(sessionSecret)
	var tok *string
	err := s.pool.QueryRow(ctx, `select id_token from sessions where secret_hash = $1`, sum[:]).Scan(&tok)
	if errors.Is(err, pgx.ErrNoRows) || tok == nil {
		return "", nil
	}
	return *tok, err
}

func sessionHash(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

package store

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrSignOnAgain refuses the API token of an account whose provider no
// longer vouches for it, until the person signs on again.
var ErrSignOnAgain = &Error{Kind: ErrNotFound,
	Message: "This token's account must sign in again through single sign-on before its tokens work again."}

// SignOnCheck is a check at the provider that a request has taken on for
// an account: who to ask about, and with what.
type SignOnCheck struct {
	UserID          int64
	Issuer, Subject string
	// Grant is what the last sign-in or check kept to ask with.
	Grant string
	// signedInAt tells a sign-on made meanwhile, which is fresher.
	signedInAt time.Time
}

// ClaimSignOnCheck takes on the check of a signed-on account at its
// provider when one is due, moving the next one every ahead; false when
// none is due or another request, on any instance, took it. The guarded
// update is what keeps it to one check per account per every.
func (s *Store) ClaimSignOnCheck(ctx context.Context, userID int64, every time.Duration) (SignOnCheck, bool, error) {
	chk := SignOnCheck{UserID: userID}
	var enc []byte
	var due time.Time
	err := s.pool.QueryRow(ctx, `update user_identities set check_due_at = now() + make_interval(secs => $2)
		where user_id = $1 and check_due_at <= now() and refused_at is null
		returning issuer, subject, grant_enc, last_sign_in_at, check_due_at`, userID, every.Seconds()).
		Scan(&chk.Issuer, &chk.Subject, &enc, &chk.signedInAt, &due)
	if errors.Is(err, pgx.ErrNoRows) {
		// Not due here: remember when it is, so this instance stops asking.
		err = s.pool.QueryRow(ctx, `select check_due_at from user_identities where user_id = $1 and refused_at is null`,
			userID).Scan(&due)
		if err == nil {
			s.auth.checkDue(userID, due)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
		return chk, false, err
	}
	if err != nil {
		return chk, false, err
	}
	s.auth.checkDue(userID, due)
	// A grant that cannot be read (another credentials key) is none: the
	// check then cannot be made, which signs the person out.
	chk.Grant, _ = s.openGrant(chk.Issuer, chk.Subject, enc)
	return chk, true, nil
}

// SignOnChecked brings the account of a check in step with what the
// provider said, as SignOnUser does, and keeps the grant to ask with next
// time. A sign-on made since the check began is fresher: the account is
// left as it made it.
func (s *Store) SignOnChecked(ctx context.Context, chk SignOnCheck, so SignOn) (*User, error) {
	grant, err := s.sealGrant(chk.Issuer, chk.Subject, so.Grant)
	if err != nil {
		return nil, err
	}
	var u *User
	var adminChanged bool
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `update user_identities set grant_enc = $3, checked_at = now()
			where user_id = $1 and last_sign_in_at = $2 and refused_at is null`, chk.UserID, chk.signedInAt, grant)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			rows, _ := tx.Query(ctx, `select `+userColumns+` from users where id = $1`, chk.UserID)
			u, err = pgx.CollectOneRow(rows, pgx.RowToAddrOfStructByName[User])
			return translate(err, "user")
		}
		u, adminChanged, err = applySignOnTx(ctx, tx, chk.UserID, so)
		return err
	})
	if err != nil {
		return nil, err
	}
	if adminChanged {
		s.authChanged(ctx) // every instance's next request has the rights the provider gave
	}
	return u, nil
}

// SignOnRefused follows a check the provider refused: the person is not
// known there any more, is no longer allowed, or there is nothing left to
// ask with. Their sessions end, their API tokens stop (ErrSignOnAgain),
// and the admin rights and teams their groups gave go, on every instance
// before it returns; signing on again brings back what the provider then
// gives. False when a sign-on made since the check began has settled it.
func (s *Store) SignOnRefused(ctx context.Context, chk SignOnCheck) (bool, error) {
	var refused bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `update user_identities set refused_at = now(), grant_enc = null
			where user_id = $1 and last_sign_in_at = $2 and refused_at is null`, chk.UserID, chk.signedInAt)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		refused = true
		if _, err := tx.Exec(ctx, `update users set is_admin = false, updated_at = now() where id = $1`, chk.UserID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `delete from team_members where user_id = $1 and by_sign_on`, chk.UserID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `delete from sessions where user_id = $1`, chk.UserID)
		return err
	})
	if err == nil && refused {
		s.authChanged(ctx)
	}
	return refused, err
}

// sealGrant encrypts a grant with the credentials key, bound to its
// identity so that it cannot be moved to another's row; nil for none.
func (s *Store) sealGrant(issuer, subject, grant string) ([]byte, error) {
	if grant == "" {
		return nil, nil
	}
	if s.aead == nil {
		return nil, errors.New("no credentials key")
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, []byte(grant), grantData(issuer, subject)), nil
}

// openGrant decrypts what sealGrant made.
func (s *Store) openGrant(issuer, subject string, enc []byte) (string, error) {
	if enc == nil {
		return "", nil
	}
	if s.aead == nil || len(enc) < s.aead.NonceSize() {
		return "", errors.New("the sign-on grant cannot be read")
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, enc[:n], enc[n:], grantData(issuer, subject))
	if err != nil {
		return "", errors.New("the sign-on grant cannot be read with this key")
	}
	return string(plain), nil
}

func grantData(issuer, subject string) []byte {
	return []byte("sign-on grant\x00" + issuer + "\x00" + subject)
}

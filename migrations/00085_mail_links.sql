-- +goose Up
-- The links of one mail that decide from the mail (a round's single yes/no
-- or choice, an approval's approve or decline). The links carry a random
-- nonce, the choice and an HMAC over both; only the nonce's SHA-256 is kept
-- here, never the nonce. A mail's links are used once: used_at is set in
-- the transaction that stores the decision, so of any number of posts, on
-- any instances, one decides. They go with the call.
create table mail_links (
    hash       bytea primary key check (length(hash) = 32),
    kind       text not null check (kind in ('round', 'approval')),
    call_id    uuid not null references calls (id) on delete cascade,
    seq        integer not null,    -- the round the mail is about (an approval's: its own number)
    person     text not null,       -- whom the mail went to: a decision made with it is theirs
    created_at timestamptz not null default now(),
    used_at    timestamptz
);
create index mail_links_call_idx on mail_links (call_id);

-- +goose Down
drop table mail_links;

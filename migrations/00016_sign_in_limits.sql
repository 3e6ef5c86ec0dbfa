-- +goose Up
-- Sign-in attempts are counted before the password is checked; an id lets a
-- successful one be taken back.
alter table login_failures add column id bigint generated always as identity;

-- Where each person signed in successfully: attempts from such an address
-- are limited per account and address, so strangers locking the account
-- elsewhere do not lock its owner out.
create table sign_in_addresses (
    user_id bigint not null references users (id) on delete cascade,
    address text not null,
    last_at timestamptz not null default now(),
    primary key (user_id, address)
);

-- +goose Down
drop table sign_in_addresses;
alter table login_failures drop column id;

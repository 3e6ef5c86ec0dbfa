-- +goose Up
-- What a person has typed into a pending round, saved as they go so that
-- they can leave and come back on any device or instance. Only a pending
-- round takes a draft; answering the round deletes it.
create table drafts (
    call_id    uuid not null,
    seq        integer not null,
    form       jsonb not null,  -- the round's posted fields, as {"name": ["value", …]}
    updated_at timestamptz not null default now(),
    primary key (call_id, seq),
    foreign key (call_id, seq) references rounds (call_id, seq) on delete cascade
);

-- +goose Down
drop table drafts;

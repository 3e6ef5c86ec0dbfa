-- +goose Up
-- An agent may answer a round's questions one at a time: a 2025-11-25
-- agent answers each elicitation/create on its own, and a task agent may
-- send part of its inputResponses in one tasks/update. The parts wait here
-- until every question of the round is answered (store.AgentAnswerPart);
-- they go with the round.
create table agent_answers (
    call_id  uuid not null,
    seq      integer not null,
    key      text not null check (length(key) between 1 and 200),
    response jsonb not null,
    at       timestamptz not null default now(),
    primary key (call_id, seq, key),
    foreign key (call_id, seq) references rounds (call_id, seq) on delete cascade
);

-- +goose Down
drop table agent_answers;

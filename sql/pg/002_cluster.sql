-- 002_cluster.sql: the coordination of several nodes on one PostgreSQL
-- state store (docs/several-hosts.md).  The nodes and lease tables come
-- with 001_init.sql; this adds the work the planner offers to the nodes
-- and the mailbox that carries control requests to the planner.

-- One row per run the planner has handed out, from its offer to the
-- moment the planner has recorded its result (then the row is deleted).
--   offered: waiting for a node (claimed with FOR UPDATE SKIP LOCKED);
--   claimed: running on claimed_by, under that node's incarnation;
--   done:    finished (failed, error, result), or reaped because its node
--            was declared dead (interrupted), waiting for the planner.
CREATE TABLE work (
    id          bigint PRIMARY KEY,          -- the run's id in runs
    request     bigint,                      -- NULL for a scheduled run
    job         text NOT NULL,
    keys        text[] NOT NULL,             -- its partitions: one, or a batch
    attempt     integer NOT NULL,
    generation  bigint NOT NULL,             -- of the planner that offered it
    state       text NOT NULL DEFAULT 'offered'
                CHECK (state IN ('offered', 'claimed', 'done')),
    offered_at  timestamptz NOT NULL DEFAULT now(),
    claimed_by  text,
    incarnation bigint,                      -- claimed_by's, when it claimed
    claimed_at  timestamptz,
    cancel      boolean NOT NULL DEFAULT false, -- the planner asks to stop it
    finished_at timestamptz,
    failed      boolean,
    interrupted boolean NOT NULL DEFAULT false, -- reaped: queue it again
    error       text,
    result      text                         -- the worker's figures (JSON)
);
CREATE INDEX work_offered ON work (id) WHERE state = 'offered';
CREATE INDEX work_claimed ON work (claimed_by) WHERE state = 'claimed';
CREATE INDEX work_done ON work (id) WHERE state = 'done';

-- Control requests a node that is not planner forwards to the planner,
-- and the planner's answers (NOTIFY bf_mail, NOTIFY bf_reply 'ID').
CREATE TABLE mailbox (
    id          bigserial PRIMARY KEY,
    from_node   text NOT NULL,
    request     bytea NOT NULL,
    response    bytea,
    created_at  timestamptz NOT NULL DEFAULT now(),
    answered_at timestamptz
);
CREATE INDEX mailbox_open ON mailbox (id) WHERE response IS NULL;

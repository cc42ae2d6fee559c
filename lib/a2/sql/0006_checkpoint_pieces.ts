/**
 * Migration 0006: checkpoints stored in pieces (../internal/log/checkpoints.ts, a fold's
 * `checkpoint` codec), so that writing or reading one never holds an event loop for the
 * whole state's JSON.
 */
export default /* sql */ `
-- ─── a2_checkpoints.pieces ───────────────────────────────────────────────────
-- null: the state is a2_checkpoints.state, one JSON text (a fold without a codec, and every
-- checkpoint written before this migration). n: the state is the n rows of
-- a2_checkpoint_pieces below, and state is ''. One JSON.parse of a 100k-event chat's state
-- (2.8 MiB) held the reader's event loop 12–30 ms, of 50k user messages (3.8 MiB) 59–66 ms;
-- a piece is one block of 256 turns (~80 KiB), read with the loop given back between pieces.
alter table a2_checkpoints add column pieces integer;

-- ─── a2_checkpoint_pieces ────────────────────────────────────────────────────
-- The pieces of one checkpoint, in order (piece 0, 1, …), written in the statement that
-- writes its a2_checkpoints row and deleted with it (pruned, or its session deleted).
create table a2_checkpoint_pieces (
  session_id text not null,
  fold text not null,
  at_index integer not null,
  piece integer not null,
  body text not null,
  constraint a2_checkpoint_pieces_session_id_fold_at_index_piece_pk primary key (session_id, fold, at_index, piece),
  constraint a2_checkpoint_pieces_checkpoint_fk foreign key (session_id, fold, at_index)
    references a2_checkpoints (session_id, fold, at_index) on delete cascade
);
`

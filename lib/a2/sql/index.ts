/**
 * a2's migrations, in the order they apply. Each is applied once, in one transaction with
 * the others pending, and recorded in a2_migrations (../internal/store/migrate.ts). Ids never
 * change and never repeat, and a shipped module is never edited: append a new module here to
 * change the schema. A function a new module changes is created there whole (`create or
 * replace`), never patched from an older module's text, so the newest module that creates a
 * function holds its live definition.
 */
import tables from './0001_tables'
import appendFunctions from './0002_append_functions'
import checkpoints from './0003_checkpoints'
import laneHeads from './0004_lane_heads'
import pushFunction from './0005_push_function'
import checkpointPieces from './0006_checkpoint_pieces'
import effectOverlapSafe from './0007_effect_overlap_safe'
import onePush from './0008_one_push'
import quietSteps from './0009_quiet_steps'

export interface Migration {
  id: number
  name: string
  sql: string
}

export const MIGRATIONS: readonly Migration[] = [
  { id: 1, name: 'tables', sql: tables },
  { id: 2, name: 'append_functions', sql: appendFunctions },
  { id: 3, name: 'checkpoints', sql: checkpoints },
  { id: 4, name: 'lane_heads', sql: laneHeads },
  { id: 5, name: 'push_function', sql: pushFunction },
  { id: 6, name: 'checkpoint_pieces', sql: checkpointPieces },
  { id: 7, name: 'effect_overlap_safe', sql: effectOverlapSafe },
  { id: 8, name: 'one_push', sql: onePush },
  { id: 9, name: 'quiet_steps', sql: quietSteps },
]

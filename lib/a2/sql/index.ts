/**
 * a2's migrations, in the order they apply. Each is applied once, in one transaction with
 * the others pending, and recorded in a2_migrations (../internal/migrate.ts). Ids never
 * change and never repeat, and a shipped module is never edited: append a new module here to
 * change the schema.
 */
import tables from './0001_tables'
import appendFunctions from './0002_append_functions'
import checkpoints from './0003_checkpoints'
import laneHeads from './0004_lane_heads'
import pushFunction from './0006_push_function'
import checkpointPieces from './0010_checkpoint_pieces'
import pushDuplicatesByKey from './0011_push_duplicates_by_key'
import stepAdmissionByKey from './0012_step_admission_by_key'
import effectOverlapSafe from './0013_effect_overlap_safe'
import capsCountStepsNeverStops from './0014_caps_count_steps_never_stops'

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
  { id: 6, name: 'push_function', sql: pushFunction },
  { id: 10, name: 'checkpoint_pieces', sql: checkpointPieces },
  { id: 11, name: 'push_duplicates_by_key', sql: pushDuplicatesByKey },
  { id: 12, name: 'step_admission_by_key', sql: stepAdmissionByKey },
  { id: 13, name: 'effect_overlap_safe', sql: effectOverlapSafe },
  { id: 14, name: 'caps_count_steps_never_stops', sql: capsCountStepsNeverStops },
]

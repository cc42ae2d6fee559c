/**
 * The library's doors, pinned: every name `@/lib/a2`, `@/lib/a2/server`, `@/lib/a2/react` and
 * `@/lib/a2/testing` export, with its kind, as the type checker sees them. A change to a door
 * (a name added, removed, or turned from a type into a value) fails here, so it is a diff someone
 * reviews, as TanStack Query's publicTypeExports test makes it.
 */
import path from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const DOORS = ['index.ts', 'server.ts', 'react.ts', 'testing.ts']

/** Each door's exports as `name: kind`, sorted. */
function exportsOf(): Record<string, string[]> {
  const root = process.cwd()
  const config = ts.readConfigFile(path.join(root, 'tsconfig.json'), ts.sys.readFile)
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root)
  const files = DOORS.map((door) => path.join(root, 'lib', 'a2', door))
  const program = ts.createProgram(files, { ...options, noEmit: true })
  const checker = program.getTypeChecker()
  const doors: Record<string, string[]> = {}
  for (const [i, file] of files.entries()) {
    const module = checker.getSymbolAtLocation(program.getSourceFile(file)!)!
    doors[DOORS[i]] = checker
      .getExportsOfModule(module)
      .map((symbol) => `${symbol.name}: ${kindOf(symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol)}`)
      .sort()
  }
  return doors
}

function kindOf(symbol: ts.Symbol): string {
  const f = symbol.flags
  if (f & ts.SymbolFlags.Class) return 'class'
  if (f & ts.SymbolFlags.Function) return 'function'
  if (f & ts.SymbolFlags.Variable) return 'value'
  if (f & (ts.SymbolFlags.Module | ts.SymbolFlags.ValueModule)) return 'namespace'
  if (f & ts.SymbolFlags.Enum) return 'enum'
  if (f & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) return 'type'
  return 'other'
}

// Building the program type-checks everything the doors import: ~6 s of CPU, minutes of wall time at a load of 40.
describe("the library's doors", () => {
  it('export exactly these names, of these kinds', { timeout: 600_000 }, () => {
    expect(exportsOf()).toEqual(DOORS_TODAY)
  })
})

const DOORS_TODAY: Record<string, string[]> = {
  'index.ts': [
    'A2Error: class',
    'A2ErrorCode: type',
    'A2Event: type',
    'A2HttpError: class',
    'A2HttpErrorOptions: type',
    'CheckpointCodec: type',
    'Contract: type',
    'EventDefinition: type',
    'EventInput: type',
    'EventOf: type',
    'EventTypes: type',
    'FAILED_TYPE: value',
    'Fold: type',
    'Folded: type',
    'MAX_JSON_DEPTH: value',
    'PartialCheckpoint: type',
    'PayloadOf: type',
    'RENAMED_TYPE: value',
    'checkJsonValue: function',
    'checkText: function',
    'defineContract: function',
    'errorStatus: value',
    'heldByOutbox: function',
    'httpErrorOf: function',
    'isA2Error: function',
    'outboxKeyOf: function',
  ],
  'server.ts': [
    'A2Error: class',
    'A2ErrorCode: type',
    'A2Event: type',
    'A2HttpError: class',
    'A2HttpErrorOptions: type',
    'A2Server: type',
    'AbortCode: type',
    'CheckpointCodec: type',
    'Consumer: type',
    'ConsumerOptions: type',
    'Contract: type',
    'DEFAULT_PAGE_SIZE: value',
    'Db: type',
    'EffectNotDispatched: class',
    'EffectOptions: type',
    'EffectStatus: type',
    'EffectUnknown: class',
    'EndOutcome: type',
    'EndedRun: type',
    'EventDefinition: type',
    'EventInput: type',
    'EventOf: type',
    'EventTypes: type',
    'Executor: type',
    'FAILED_TYPE: value',
    'Fold: type',
    'Folded: type',
    'MAX_EVENTS_PER_PUSH: value',
    'MAX_JSON_DEPTH: value',
    'MigrateResult: type',
    'NotRetryable: class',
    'OpenRun: type',
    'PageReader: type',
    'PartialCheckpoint: type',
    'PayloadOf: type',
    'PushFound: type',
    'RENAMED_TYPE: value',
    'ReconcileResult: type',
    'RunAborted: class',
    'RunContext: type',
    'RunStatus: type',
    'SessionCaps: type',
    'SessionMatch: type',
    'SessionSummary: type',
    'Store: type',
    'Worker: class',
    'WorkerOptions: type',
    'abortReason: function',
    'checkJsonValue: function',
    'checkText: function',
    'consumer: function',
    'createServer: function',
    'defineContract: function',
    'errorResponse: function',
    'errorStatus: value',
    'heldByOutbox: function',
    'httpErrorOf: function',
    'isA2Error: function',
    'isStop: function',
    'isStoreUnreachable: function',
    'migrate: function',
    'openPgliteStore: function',
    'openPostgresStore: function',
    'outboxKeyOf: function',
    'readAll: function',
    'readJsonBody: function',
    'readPages: function',
    'schema: namespace',
    'sseResponse: function',
  ],
  'react.ts': [
    'A2HttpError: class',
    'Connection: type',
    'CourierStorage: type',
    'OutboxCourierOptions: type',
    'OutboxEntry: type',
    'OutboxStorage: type',
    'PushError: class',
    'PushInput: type',
    'SessionPush: type',
    'SessionSnapshot: type',
    'SessionStore: type',
    'clientEventId: function',
    'createSessionStore: function',
    'httpErrorOf: function',
    'startOutboxCourier: function',
    'useSession: function',
  ],
  'testing.ts': [
    'Interceptor: type',
    'Run: type',
    'RunKey: type',
    'RunStatus: type',
    'countingStore: function',
    'forgetFolds: function',
    'hangingModel: function',
    'interceptStore: function',
    'listRuns: function',
    'query: function',
    'runOf: function',
    'testContract: value',
    'waitForRun: function',
    'waitUntil: function',
  ],
}

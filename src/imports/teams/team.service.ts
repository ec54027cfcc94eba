import type { Executor, OperationsTeam } from '../../db/database.js';
import { AppError, badRequest } from '../../errors.js';

const MAX_NAME_LENGTH = 200;
// eslint-disable-next-line no-control-regex -- control characters are exactly what this rejects
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

/**
 * Team names are matched exactly by the process endpoint (operations_team_name), so they are stored
 * trimmed: a stray blank typed by an operator would otherwise make the team unreachable.
 */
export async function createTeam(db: Executor, name: string): Promise<OperationsTeam> {
  const clean = name.trim();
  if (clean === '' || clean.length > MAX_NAME_LENGTH || CONTROL_CHARS.test(clean)) {
    throw badRequest('invalid_team_name', `The team name must be 1-${MAX_NAME_LENGTH} printable characters.`, 'name');
  }
  try {
    return await db.insertInto('operations_teams').values({ name: clean }).returningAll().executeTakeFirstOrThrow();
  } catch (err) {
    if ((err as { code?: string }).code === '23505') {
      throw new AppError(409, 'operations_team_already_exists', `Operations team '${clean}' already exists.`, [], {}, {}, { cause: err });
    }
    throw err;
  }
}

export const listTeams = (db: Executor): Promise<OperationsTeam[]> =>
  db.selectFrom('operations_teams').selectAll().orderBy('name').execute();

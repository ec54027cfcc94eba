import type { Executor, OperationsTeam } from '../../db/database.js';

export const findTeamByName = (db: Executor, name: string): Promise<OperationsTeam | undefined> =>
  db.selectFrom('operations_teams').selectAll().where('name', '=', name).executeTakeFirst();

import { z } from 'zod';
import { importStatusSchema, parseScheduleBody, parseValidateBody, scheduleBodySchema, validateBodySchema } from '../../imports/account-imports/account-import.schemas.js';
import type { AccountImportService } from '../../imports/account-imports/account-import.types.js';
import type { RouteDef } from '../route.js';

const pairParams = z.object({ import_supplier_code: z.string(), external_identifier: z.string() });
const envelope = (description: string) => ({ description });

/** The published interface's second version: one account at a time, scheduled through the pipeline. */
export function v2AccountRoutes(service: AccountImportService, now: () => Date): RouteDef[] {
  return [
    {
      method: 'POST',
      url: '/v2/data-import/accounts/',
      operationId: 'v2_schedule_account_creation',
      summary: 'Schedule the creation of one account: validated now, created by the pipeline inside its window.',
      tags: ['account imports (v2)'],
      auth: 'token',
      body: scheduleBodySchema,
      responses: {
        201: { description: 'Scheduled (or the same request again while its import is open): the import as it stands.', schema: importStatusSchema },
        400: envelope(
          'invalid_request (the body or task_params: schedule_window_start_in_past, schedule_window_end_too_far_in_future, schedule_window_start__after_end), import_process_failed_validation (every problem in errors), account_import_process_already_imported (with account_id), account_import_process_already_scheduled, operations_team_not_found',
        ),
        401: envelope('Not authenticated.'),
      },
      handler: async (req, reply) => {
        const view = await service.schedule(parseScheduleBody(req.body, now()));
        reply.code(201);
        return view;
      },
    },
    {
      method: 'POST',
      url: '/v2/data-import/accounts/validate/',
      operationId: 'v2_validate_account',
      summary: 'Validate an account for scheduling, without storing anything.',
      tags: ['account imports (v2)'],
      auth: 'token',
      body: validateBodySchema,
      responses: {
        200: { description: 'The account is valid.', schema: z.object({}) },
        400: envelope('invalid_request, account_failed_validation (every problem in errors, at the account\'s own paths)'),
        401: envelope('Not authenticated.'),
      },
      handler: async (req) => {
        await service.validate(parseValidateBody(req.body, now()));
        return {};
      },
    },
    {
      method: 'GET',
      url: '/v2/data-import/accounts/:import_supplier_code/:external_identifier/',
      operationId: 'v2_account_import_status',
      summary: "The status of a pair's latest scheduled import.",
      tags: ['account imports (v2)'],
      auth: 'token',
      params: pairParams,
      responses: { 200: { description: 'The import exists.', schema: importStatusSchema }, 401: envelope('Not authenticated.'), 404: envelope('not_found') },
      handler: async (req) => {
        const p = req.params as { import_supplier_code: string; external_identifier: string };
        return service.status(p.import_supplier_code, p.external_identifier);
      },
    },
  ];
}

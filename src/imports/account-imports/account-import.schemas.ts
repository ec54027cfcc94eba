import { z } from 'zod';
import { AppError, type ErrorItem } from '../../errors.js';
import { parseIsoDatetime } from '../shared/fields.js';
import { issuesToItems } from '../shared/validation.js';
import { IMPORT_EVENTS, IMPORT_STATUSES, type ScheduleRequest, type TaskParams } from './account-import.types.js';

// The bodies of the v2 door (the published ScheduleAccountCreation, ValidateAccount and
// TaskParameters) and its answer (ImportStatusResponse). The payload is the EnergyAccount, checked
// afterwards by the account service with every v1 rule; here only the envelope around it.

/** How far ahead a window may end (the published rule: not more than 4 days in the future). */
export const MAX_WINDOW_AHEAD_MS = 4 * 24 * 3600 * 1000;
/** A window start this little in the past is a clock's skew, not the past: a client's "now" arrives late. */
export const WINDOW_START_SKEW_MS = 60 * 1000;

const account = z.record(z.string(), z.unknown()).describe('The published EnergyAccount (the account data object of decisions §1).').meta({ id: 'EnergyAccountPayload' });

const taskParamsShape = z
  .strictObject({
    is_dry_run: z.boolean().optional(),
    schedule_window_start: z.string().nullable().optional().describe('ISO 8601 date-time with Z or an offset; default now'),
    schedule_window_end: z.string().nullable().optional().describe('ISO 8601 date-time with Z or an offset; default 4 days from now'),
  })
  .meta({ id: 'TaskParameters' });

const scheduleShape = z.strictObject({ payload: account, task_params: taskParamsShape }).meta({ id: 'ScheduleAccountCreation' });
const validateShape = z.strictObject({ payload: account, task_params: taskParamsShape.optional() }).meta({ id: 'ValidateAccount' });

/** The request bodies, for the OpenAPI document. */
export const scheduleBodySchema = scheduleShape;
export const validateBodySchema = validateShape;

const latestError = z.object({ code: z.string().nullable(), detail: z.string().nullable(), domain: z.string().nullable() }).meta({ id: 'LatestError' });

/** The published ImportStatusResponse (our answer to the status and schedule endpoints). */
export const importStatusSchema = z
  .object({
    status: z.enum(IMPORT_STATUSES),
    kraken_identifier: z.string().nullable().describe('The account number, once PROCESSED'),
    created_at: z.string().describe('ISO 8601 date-time'),
    modified_at: z.string().describe('ISO 8601 date-time'),
    latest_event: z.object({ event: z.enum(IMPORT_EVENTS), occurred_at: z.string(), data: latestError.nullable() }).meta({ id: 'ImportEvent' }),
    latest_error: latestError.nullable(),
  })
  .meta({ id: 'ImportStatusResponse' });

const invalid = (items: ErrorItem[]): AppError => new AppError(400, 'invalid_request', 'Invalid request.', items);

/** Checks the task parameters against the published rules, relative to `now`, and fills in their defaults. Items are at `task_params.*`. */
export function taskParamsOf(raw: z.output<typeof taskParamsShape>, now: Date): TaskParams {
  const items: ErrorItem[] = [];
  const at = (field: string) => `task_params.${field}`;
  const instant = (field: 'schedule_window_start' | 'schedule_window_end'): Date | null | undefined => {
    const v = raw[field];
    if (v === undefined || v === null) return v;
    const d = parseIsoDatetime(v);
    if (!d) items.push({ code: 'invalid_datetime', detail: 'Enter a valid datetime in ISO 8601 format with Z or a UTC offset (YYYY-MM-DDTHH:MM:SSZ).', attr: at(field) });
    return d ?? undefined;
  };
  const givenStart = instant('schedule_window_start');
  const givenEnd = instant('schedule_window_end');
  if (items.length > 0) throw invalid(items);
  const start = givenStart ?? now;
  // The latest end allowed: a window is as wide as the rules let it be unless the client narrows it.
  const end = givenEnd ?? new Date(now.getTime() + MAX_WINDOW_AHEAD_MS);
  if (givenStart && givenStart.getTime() < now.getTime() - WINDOW_START_SKEW_MS) {
    items.push({ code: 'schedule_window_start_in_past', detail: 'The schedule window may not start in the past.', attr: at('schedule_window_start') });
  }
  if (end.getTime() > now.getTime() + MAX_WINDOW_AHEAD_MS) {
    items.push({ code: 'schedule_window_end_too_far_in_future', detail: 'The schedule window may end at most 4 days from now.', attr: at('schedule_window_end') });
  }
  if (start.getTime() >= end.getTime()) {
    items.push({ code: 'schedule_window_start__after_end', detail: 'The schedule window must start before it ends.', attr: at('schedule_window_start') });
  }
  if (items.length > 0) throw invalid(items);
  return { is_dry_run: raw.is_dry_run ?? false, schedule_window_start: start, schedule_window_end: end };
}

/** A ScheduleAccountCreation body, checked and with its defaults (400 invalid_request otherwise). */
export function parseScheduleBody(body: unknown, now: Date): ScheduleRequest {
  const parsed = scheduleShape.safeParse(body, { reportInput: true });
  if (!parsed.success) throw invalid(issuesToItems(parsed.error.issues));
  return { payload: parsed.data.payload, task_params: taskParamsOf(parsed.data.task_params, now) };
}

/** A ValidateAccount body: its payload (task_params, when given, are checked too). */
export function parseValidateBody(body: unknown, now: Date): unknown {
  const parsed = validateShape.safeParse(body, { reportInput: true });
  if (!parsed.success) throw invalid(issuesToItems(parsed.error.issues));
  if (parsed.data.task_params) taskParamsOf(parsed.data.task_params, now);
  return parsed.data.payload;
}


import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { RegistrationNotFound, type RegistrationService } from '../../registration/registration.service.js';
import { METER_POINT_STATUSES } from '../../registration/states.js';
import type { RouteDef } from '../route.js';
import { parseOrThrow } from '../../imports/shared/validation.js';

// The published document's two registration endpoints (decisions.md §8), with its bodies exactly:
// their 404s are the document's own shapes, not the envelope.

const pairParams = z.object({ import_supplier_code: z.string(), external_account_number: z.string() });

const flowsSchema = z.object({
  external_account_number: z.string(),
  import_supplier_code: z.string(),
  meter_points: z.array(
    z.object({ mpxn: z.string(), status: z.enum(['REGISTRATION_FLOW_SUCCESS', 'REGISTRATION_FLOW_ERROR']), error_detail: z.string().optional() }),
  ),
});
const flowErrorSchema = z.object({ external_account_number: z.string(), import_supplier_code: z.string(), error_detail: z.string() });
const statusSchema = z.object({ mpxn: z.string(), status: z.enum(METER_POINT_STATUSES) });
const statusErrorSchema = z.object({ error: z.string() });
const batchParams = z.object({ batch_id: z.string() });
const batchRegistrationSchema = z.object({ batch_id: z.string(), accounts: z.number().int(), meter_points_marked: z.number().int(), meter_points_not_marked: z.number().int() });
const withdrawalBodySchema = z.strictObject({ mpxn: z.string().min(1).max(64).optional() });
const withdrawalsSchema = z.object({
  external_account_number: z.string(),
  import_supplier_code: z.string(),
  meter_points: z.array(z.object({ mpxn: z.string(), status: z.enum(['WITHDRAWAL_FLOW_SUCCESS', 'WITHDRAWAL_FLOW_ERROR']), error_detail: z.string().optional() })),
});

/** The published 404 bodies are answered as they are; anything else goes to the error handler. */
async function orPublished404<T>(reply: FastifyReply, work: () => Promise<T>): Promise<T | FastifyReply> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof RegistrationNotFound) return reply.code(404).send(err.body);
    throw err;
  }
}

export function registrationRoutes(registration: RegistrationService): RouteDef[] {
  return [
    {
      method: 'POST',
      url: '/v1/data-import/send-registration-flows/:import_supplier_code/:external_account_number/',
      operationId: 'send_registration_flows',
      summary: 'Mark the meter points of an imported account for registration; each is then requested from the registration gateway by the queue.',
      tags: ['registration'],
      auth: 'token',
      params: pairParams,
      responses: {
        200: { description: 'Each meter point: REGISTRATION_FLOW_SUCCESS when marked, REGISTRATION_FLOW_ERROR with error_detail when not.', schema: flowsSchema },
        401: { description: 'Not authenticated.' },
        404: { description: 'The account is not imported, or has no meter points.', schema: flowErrorSchema },
      },
      handler: async (req, reply) => {
        const p = req.params as { import_supplier_code: string; external_account_number: string };
        return orPublished404(reply, () => registration.sendFlows(p.import_supplier_code, p.external_account_number));
      },
    },
    {
      method: 'GET',
      url: '/v1/data-import/meterpoint-statuses-for-account/:import_supplier_code/:external_account_number/',
      operationId: 'meterpoint_statuses_for_account',
      summary: "The account's meter points and their registration status.",
      tags: ['registration'],
      auth: 'token',
      params: pairParams,
      responses: {
        200: { description: 'A flat list, one entry per meter point.', schema: z.array(statusSchema) },
        401: { description: 'Not authenticated.' },
        404: { description: 'The account is not imported, or has no meter points.', schema: statusErrorSchema },
      },
      handler: async (req, reply) => {
        const p = req.params as { import_supplier_code: string; external_account_number: string };
        return orPublished404(reply, () => registration.statuses(p.import_supplier_code, p.external_account_number));
      },
    },
    {
      method: 'POST',
      url: '/v1/data-import/batches/:batch_id/registration-flows/',
      operationId: 'register_batch',
      summary: "Mark the meter points of every account the batch created for registration (as send-registration-flows does for one account).",
      tags: ['registration', 'batches'],
      auth: 'token',
      params: batchParams,
      responses: {
        200: { description: 'How many accounts, and how many of their meter points were marked or not (an attempt under way, on supply).', schema: batchRegistrationSchema },
        400: { description: 'batch_is_dry_run, registration_flow_error (no registration gateway is configured)' },
        401: { description: 'Not authenticated.' },
        404: { description: 'batch_not_found' },
      },
      handler: async (req) => registration.registerBatch((req.params as { batch_id: string }).batch_id),
    },
    {
      method: 'POST',
      url: '/v1/data-import/registration-withdrawals/:import_supplier_code/:external_account_number/',
      operationId: 'withdraw_registration',
      summary: "Withdraw the current registration of the account's meter points (or of one, by mpxn), where it may be withdrawn: REGISTRATION_REQUESTED, REGISTRATION_ACCEPTED or OBJECTION_RECEIVED.",
      tags: ['registration'],
      auth: 'token',
      params: pairParams,
      body: withdrawalBodySchema,
      responses: {
        200: { description: 'Each meter point: WITHDRAWAL_FLOW_SUCCESS when its withdrawal was sent on, WITHDRAWAL_FLOW_ERROR with error_detail when there was nothing to withdraw.', schema: withdrawalsSchema },
        400: { description: 'invalid_request, registration_flow_error (no registration gateway is configured)' },
        401: { description: 'Not authenticated.' },
        404: { description: 'The account is not imported, or has no such meter point.', schema: flowErrorSchema },
      },
      handler: async (req, reply) => {
        const p = req.params as { import_supplier_code: string; external_account_number: string };
        const body = parseOrThrow(withdrawalBodySchema, req.body ?? {}, 'invalid_request', 'Invalid request.');
        return orPublished404(reply, () => registration.withdraw(p.import_supplier_code, p.external_account_number, body.mpxn));
      },
    },
  ];
}

/**
 * Meter-point registration states (issue 15; decisions.md §8; docs/registration.md). The status of
 * every meter point is one of the published GbrMeterPointStatus values; this service moves a meter
 * point through the subset §8 tabulates, and the transitions below are that table, as data.
 */

/** The published enumeration (GbrMeterPointStatus.status), in the document's order. */
export const METER_POINT_STATUSES = [
  'PRE_REGISTRATION', 'UNABLE_TO_REGISTER', 'AREGI_SENT', 'NOMINATION_SENT', 'NOMINATION_REJECTED',
  'OFFER_RECEIVED', 'OFFER_REJECTED', 'REGISTRATION_REQUESTED', 'REGISTRATION_ACCEPTED',
  'REGISTRATION_REJECTED', 'WITHDRAWAL_REQUESTED', 'REGISTRATION_WITHDRAWN', 'OBJECTION_RECEIVED',
  'REGISTRATION_OBJECTED', 'MTD_RECEIVED', 'ON_SUPPLY', 'OPENING_READ_DISPUTED', 'MTD_DISPUTED',
  'METER_EXCHANGE_REQUESTED', 'ERRONEOUS_GAIN_PROPOSED', 'ERRONEOUS_GAIN_ACCEPTED',
  'ERRONEOUS_GAIN_REJECTED', 'ERRONEOUS_GAIN_CANCELLED', 'LOSS_REQUESTED_ERRONEOUS_GAIN',
  'LOSS_PENDING_ERRONEOUS_GAIN', 'LOST_ERRONEOUS_GAIN', 'ERRONEOUS_LOSS_PROPOSED', 'ERRONEOUS_LOSS_ACCEPTED',
  'ERRONEOUS_LOSS_REJECTED', 'ERRONEOUS_LOSS_CANCELLED', 'ET_REQUESTED', 'ET_ACCEPTED', 'ET_LOSS_PENDING',
  'ET_COMPLETED', 'ET_CANCELLED', 'LOSS_REQUESTED', 'LOSS_PENDING', 'LOST', 'DISCONNECTED', 'ERRONEOUS_LOSS',
  'LOSS_OBJECTION_REQUESTED', 'LOSS_OBJECTION_REMOVAL_REQUESTED', 'LOSS_OBJECTION_ACCEPTED',
  'CLOSING_READ_DISPUTE', 'DE-ENERGISED', 'UNDERGOING_REGISTRATION', 'REGISTRATION_AT_RISK',
  'GAIN_PENDING_DAP', 'LOSS_PENDING_DAP',
] as const;
export type MeterPointStatus = (typeof METER_POINT_STATUSES)[number];

/** The gateway's event types (§8). */
export const EVENT_TYPES = ['ACCEPTED', 'REJECTED', 'OBJECTION_RECEIVED', 'OBJECTION_UPHELD', 'OBJECTION_WITHDRAWN', 'WITHDRAWN', 'SUPPLY_STARTED'] as const;
export type RegistrationEventType = (typeof EVENT_TYPES)[number];
export const isEventType = (s: string): s is RegistrationEventType => (EVENT_TYPES as readonly string[]).includes(s);

/** Where marking starts a new attempt (UNDERGOING_REGISTRATION); from any other status it starts nothing. */
export const MARKABLE: readonly MeterPointStatus[] = ['PRE_REGISTRATION', 'UNABLE_TO_REGISTER', 'REGISTRATION_REJECTED', 'REGISTRATION_OBJECTED', 'REGISTRATION_WITHDRAWN'];

/** Where an operator may withdraw the current attempt (WITHDRAWAL_REQUESTED once the gateway takes it). */
export const WITHDRAWABLE: readonly MeterPointStatus[] = ['REGISTRATION_REQUESTED', 'REGISTRATION_ACCEPTED', 'OBJECTION_RECEIVED'];

/** Statuses whose registration is still open: the poller reads events while any meter point is in one. */
export const OPEN_STATUSES: readonly MeterPointStatus[] = ['UNDERGOING_REGISTRATION', 'REGISTRATION_REQUESTED', 'REGISTRATION_ACCEPTED', 'OBJECTION_RECEIVED', 'WITHDRAWAL_REQUESTED'];

/** §8's event transitions: from which statuses an event type moves a meter point, and to what. */
export const ON_EVENT: Record<RegistrationEventType, { from: readonly MeterPointStatus[]; to: MeterPointStatus }> = {
  ACCEPTED: { from: ['REGISTRATION_REQUESTED'], to: 'REGISTRATION_ACCEPTED' },
  REJECTED: { from: ['REGISTRATION_REQUESTED'], to: 'REGISTRATION_REJECTED' },
  OBJECTION_RECEIVED: { from: ['REGISTRATION_REQUESTED', 'REGISTRATION_ACCEPTED'], to: 'OBJECTION_RECEIVED' },
  OBJECTION_UPHELD: { from: ['OBJECTION_RECEIVED'], to: 'REGISTRATION_OBJECTED' },
  OBJECTION_WITHDRAWN: { from: ['OBJECTION_RECEIVED'], to: 'REGISTRATION_ACCEPTED' },
  WITHDRAWN: { from: ['WITHDRAWAL_REQUESTED'], to: 'REGISTRATION_WITHDRAWN' },
  SUPPLY_STARTED: { from: ['REGISTRATION_ACCEPTED'], to: 'ON_SUPPLY' },
};

export type EventOutcome = { applied: true; to: MeterPointStatus } | { applied: false; reason: string };

/**
 * What an event does to a meter point: it applies only to the current attempt (the request_id it
 * names) and only from the statuses §8 lists; anything else is kept in the history with the reason
 * and moves nothing, so a late, repeated or out-of-order event can never move a status backwards.
 */
export function eventOutcome(current: { status: MeterPointStatus; requestId: string | null }, event: { type: RegistrationEventType; requestId: string }): EventOutcome {
  if (current.requestId !== event.requestId) return { applied: false, reason: 'the event is for an earlier attempt' };
  const rule = ON_EVENT[event.type];
  if (!rule.from.includes(current.status)) return { applied: false, reason: `${event.type} does not apply to a meter point in ${current.status}` };
  return { applied: true, to: rule.to };
}

import { z } from 'zod';

/** The error envelope every non-2xx response carries, as a schema for the OpenAPI document. */
export const errorEnvelopeSchema = z
  .object({
    detail: z.string(),
    code: z.string(),
    errors: z.array(z.object({ detail: z.string(), code: z.string(), attr: z.string().nullable() })),
  })
  .meta({ id: 'ErrorEnvelope' });

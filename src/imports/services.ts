import type { Deps } from '../deps.js';
import { createAccountImportService } from './account-imports/account-import.service.js';
import { createAccountService } from './accounts/account.service.js';
import { makeEmbeddedExtras } from './accounts/embedded-extras.js';
import { createBatchService } from './batches/batch.service.js';
import { createNoteService } from './notes/note.service.js';
import { createPaymentInstructionService } from './payment-instructions/payment-instruction.service.js';
import { createStatementService } from './statements/statement.service.js';
import { createTransactionService } from './transactions/transaction.service.js';
import { createRegistrationService } from '../registration/registration.service.js';

/** The domain core: built once per process, called by the REST routes and the queue workers alike. */
export function createServices(deps: Deps) {
  const notes = createNoteService(deps);
  const transactions = createTransactionService(deps);
  const statements = createStatementService(deps);
  const paymentInstructions = createPaymentInstructionService(deps);
  const accounts = createAccountService({
    ...deps,
    onAccountsCreated: deps.ports.onAccountsCreated,
    embeddedExtras: makeEmbeddedExtras({ notes, transactions, statements, paymentInstructions }),
  });
  return {
    accounts,
    /** The v2 door: one account at a time, scheduled through the same pipeline. */
    accountImports: createAccountImportService({ db: deps.db, clock: deps.clock, stageQueue: deps.ports.stageQueue, accounts }),
    notes,
    transactions,
    statements,
    paymentInstructions,
    batches: createBatchService({ ...deps, stageQueue: deps.ports.stageQueue }),
    /** Meter-point registration (decisions.md §8): marking, and where each meter point stands. */
    registration: createRegistrationService({ db: deps.db, queue: deps.ports.registrationQueue, gateway: deps.config.registrationGateway }),
  };
}

export type Services = ReturnType<typeof createServices>;

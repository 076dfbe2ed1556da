import { type AuditAction, recordAudit } from '../audit.js';
import type { VdiContext } from '../context.js';

/** Runs `act`, recording its outcome in the audit log either way; `actionFor` may name the action from the result. */
export async function runAudited<T>(
  ctx: VdiContext,
  entry: { action: AuditAction; user: string; target: string },
  act: () => Promise<T>,
  actionFor: (result: T) => AuditAction = () => entry.action,
): Promise<T> {
  let result: T;
  try {
    result = await act();
  } catch (error) {
    await recordAudit(ctx, { ...entry, error });
    throw error;
  }
  await recordAudit(ctx, { ...entry, action: actionFor(result) });
  return result;
}

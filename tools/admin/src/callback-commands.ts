import { createCallbackAdmin } from '@media/callbacks';
import { createLogger } from '@media/common';
import type { AdminContext } from './context';

/** How long `retry-callback` waits for the dispatcher beyond the receiver's own time limit. */
const PICKUP_ALLOWANCE_MS = 10_000;

/**
 * `retry-callback --id msg_… [--workspace ID]`: queues one manual attempt (the dashboard's "Retry
 * callback") and waits for the dispatcher to make it, so the operator sees the receiver's answer.
 * Without `--workspace` any workspace's callback may be retried.
 */
export async function retryCallback(ctx: AdminContext, messageId: string, workspaceId: string | undefined): Promise<unknown> {
  // Errors only: stdout carries the command's JSON answer.
  const handle = createCallbackAdmin(ctx.config, ctx.redis, createLogger('admin', 'error'));
  try {
    // No Idempotency-Key here, so never a replay: only the request is printed.
    const { callback: _before, replayed: _replayed, ...request } = await handle.admin.retryNow(workspaceId ?? null, messageId);
    const deadline = Date.now() + ctx.config.webhookTimeoutMs + PICKUP_ALLOWANCE_MS;
    let attempt = await handle.admin.findManualAttempt(messageId, request.request_id);
    while (!attempt && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      attempt = await handle.admin.findManualAttempt(messageId, request.request_id);
    }
    const { callback } = await handle.admin.describe(null, messageId);
    return {
      ...request,
      // null: the dispatcher has not made the attempt yet (is it running?); it stays queued.
      attempt: attempt ?? null,
      state: callback.state,
      attempts: callback.attempt_count,
      next_attempt_at: callback.next_attempt_ms === null ? null : new Date(callback.next_attempt_ms).toISOString(),
    };
  } finally {
    await handle.close();
  }
}

/** No callback with that id in the caller's workspace (another workspace's callback looks the same). */
export class CallbackNotFoundError extends Error {
  override readonly name = 'CallbackNotFoundError';

  constructor(readonly messageId: string) {
    super(`no callback ${messageId}`);
  }
}

import { ApiError } from '../http/api-error';

/** OpenAI's list shape, shared by every list of the API. */
export function listObject<T extends { id: string }>(data: T[], hasMore: boolean) {
  return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
}

/**
 * A page whose `after` named nothing of the list is refused: an empty page would read as the end of
 * the list. (An item removed within the hour still names its place: a client that deletes what it
 * pages through goes on from there.)
 */
export function refuseUnknownCursor(page: { cursorFound: boolean }, item: string): void {
  if (page.cursorFound) return;
  throw ApiError.invalid(
    `Invalid 'after': no ${item} of this workspace has that id (removed over an hour ago, or never one); list again without 'after'.`,
    'after',
    'invalid_value',
  );
}

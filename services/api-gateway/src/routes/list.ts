/** OpenAI's list shape, shared by every list of the API. */
export function listObject<T extends { id: string }>(data: T[], hasMore: boolean) {
  return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
}

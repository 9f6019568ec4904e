// Small, pure edits of cached lists, shared by the frame handlers and the pages' own writes
// (a mutation's answer goes into the cache the same way the event announcing it does, so
// whichever comes second changes nothing).

export interface HasId {
  id: string | number;
}

/** `list` with `row` in place of the row with its id (merged over it), or added. */
export function upsertById<T extends HasId>(
  list: readonly T[] | undefined,
  row: T,
  order?: (a: T, b: T) => number,
): T[] | undefined {
  if (!list) return list;
  const at = list.findIndex((r) => r.id === row.id);
  const next = at < 0 ? [row, ...list] : list.map((r, i) => (i === at ? { ...r, ...row } : r));
  return order ? next.sort(order) : next;
}

export function removeById<T extends HasId>(list: readonly T[] | undefined, id: string | number): T[] | undefined {
  return list?.filter((r) => r.id !== id);
}

export const byName = <T extends { name: string }>(a: T, b: T) => a.name.localeCompare(b.name);

/** Newest first by an RFC 3339 field, ties by id (the service's own order). */
export const newestFirst =
  <T extends HasId>(field: (row: T) => string) =>
  (a: T, b: T) =>
    field(b).localeCompare(field(a)) || String(b.id).localeCompare(String(a.id));

/** True for an object with a string or number `id`: the least a frame's row must have. */
export function isRow(value: unknown): value is HasId & Record<string, unknown> {
  if (!value || typeof value !== 'object') return false;
  const id = (value as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number';
}

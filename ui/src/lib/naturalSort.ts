// Names sort the way people count: `many-2` before `many-10`, case and accents ignored.
const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

export function compareNatural(a: string, b: string): number {
  return collator.compare(a, b);
}

/** A sorted copy of `items`, by `name` (ties keep their order: Array.prototype.sort is stable). */
export function sortByName<T extends { name: string }>(items: readonly T[]): T[] {
  return [...items].sort((a, b) => compareNatural(a.name, b.name));
}

/** Whether `name` contains every word of `query` (case-insensitive; an empty query matches all). */
export function matchesQuery(name: string, query: string): boolean {
  const haystack = name.toLocaleLowerCase();
  return query
    .toLocaleLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((word) => haystack.includes(word));
}

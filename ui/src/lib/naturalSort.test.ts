import { compareNatural, matchesQuery, sortByName } from './naturalSort';

describe('natural sort', () => {
  it('orders numbers inside names by value, ignoring case', () => {
    const names = ['many-10', 'many-2', 'Many-1', 'alpha', 'many-20', 'Beta'];
    expect([...names].sort(compareNatural)).toEqual(['alpha', 'Beta', 'Many-1', 'many-2', 'many-10', 'many-20']);
  });

  it('sorts rows by their name without touching the input', () => {
    const rows = [{ name: 'p-10' }, { name: 'p-9' }];
    expect(sortByName(rows).map((r) => r.name)).toEqual(['p-9', 'p-10']);
    expect(rows[0].name).toBe('p-10');
  });

  it('matches every word of a query, in any order', () => {
    expect(matchesQuery('Brave Otter', 'otter br')).toBe(true);
    expect(matchesQuery('Brave Otter', 'otter cat')).toBe(false);
    expect(matchesQuery('anything', '  ')).toBe(true);
  });
});

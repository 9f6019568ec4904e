import { budgetChanges, budgetValuesOf, budgetWindows, checkBudgets, isSpent, nextReset, parseUsd } from './budgets';

describe('amounts in USD as typed', () => {
  it('reads empty as none, and plain or $-prefixed amounts as numbers', () => {
    expect(parseUsd('', 'budget')).toEqual({ value: null });
    expect(parseUsd('   ', 'cap')).toEqual({ value: null });
    expect(parseUsd('25', 'budget')).toEqual({ value: 25 });
    expect(parseUsd(' $7.50 ', 'budget')).toEqual({ value: 7.5 });
    expect(parseUsd('.5', 'cap')).toEqual({ value: 0.5 });
    expect(parseUsd('3.', 'cap')).toEqual({ value: 3 });
    expect(parseUsd('999999.99', 'budget')).toEqual({ value: 999_999.99 });
  });

  it('allows a budget of 0 (it allows nothing) but not a cap of 0', () => {
    expect(parseUsd('0', 'budget')).toEqual({ value: 0 });
    expect(parseUsd('0', 'cap').error).toBe('A cap must be more than $0, or empty for none.');
    expect(parseUsd('0.00', 'cap').error).toBe('A cap must be more than $0, or empty for none.');
  });

  it('says what is wrong with a negative amount, words, or too much', () => {
    expect(parseUsd('-5', 'budget').error).toBe('A budget cannot be negative: $0 or more, or empty for none.');
    expect(parseUsd('-$5', 'budget').error).toBe('A budget cannot be negative: $0 or more, or empty for none.');
    expect(parseUsd('-1', 'cap').error).toBe('A cap must be more than $0, or empty for none.');
    for (const junk of ['five', '1e3', '1,000', '5 USD', '.', 'Infinity', 'NaN', '--5']) {
      expect(parseUsd(junk, 'budget').error, junk).toBe('Enter an amount in USD, like 25 or 7.50, or leave it empty for no budget.');
    }
    expect(parseUsd('abc', 'cap').error).toBe('Enter an amount in USD, like 2 or 0.50, or leave it empty for no cap.');
    expect(parseUsd('1000000', 'budget').error).toBe('Less than $1,000,000.');
  });
});

describe("a project's budgets in its forms", () => {
  const project = { budget_daily_usd: 5, budget_monthly_usd: null };

  it('starts from the stored budgets, empty for none', () => {
    expect(budgetValuesOf(project)).toEqual({ daily: '5', monthly: '' });
    expect(budgetValuesOf({})).toEqual({ daily: '', monthly: '' });
  });

  it('checks each field on its own', () => {
    expect(checkBudgets({ daily: '-1', monthly: '100' })).toEqual({ daily: 'A budget cannot be negative: $0 or more, or empty for none.' });
    expect(checkBudgets({ daily: '', monthly: 'lots' })).toEqual({
      monthly: 'Enter an amount in USD, like 25 or 7.50, or leave it empty for no budget.',
    });
    expect(checkBudgets({ daily: '0', monthly: '' })).toEqual({});
  });

  it('sends only the budgets that changed, an emptied one as null (which clears it)', () => {
    expect(budgetChanges({ daily: '5.00', monthly: '' }, project)).toEqual({});
    expect(budgetChanges({ daily: '', monthly: '150' }, project)).toEqual({ budget_daily_usd: null, budget_monthly_usd: 150 });
    // A new project: only the budgets set.
    expect(budgetChanges({ daily: '', monthly: '' }, {})).toEqual({});
    expect(budgetChanges({ daily: '0', monthly: '' }, {})).toEqual({ budget_daily_usd: 0 });
  });
});

describe("a project's spending windows", () => {
  it('are the UTC day and month, whatever the local time zone says', () => {
    const lateOnNewYearsEve = Date.parse('2026-12-31T23:30:00Z');
    expect(budgetWindows(lateOnNewYearsEve)).toEqual({ day: '2026-12-31', month: '2026-12-01' });
    expect(new Date(nextReset('day', lateOnNewYearsEve)).toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(new Date(nextReset('month', lateOnNewYearsEve)).toISOString()).toBe('2027-01-01T00:00:00.000Z');
    const midFebruary = Date.parse('2028-02-15T08:00:00Z');
    expect(budgetWindows(midFebruary)).toEqual({ day: '2028-02-15', month: '2028-02-01' });
    expect(new Date(nextReset('month', midFebruary)).toISOString()).toBe('2028-03-01T00:00:00.000Z');
  });

  it('count a budget as spent once reached, a budget of 0 at once, and none never', () => {
    expect(isSpent(4.99, 5)).toBe(false);
    expect(isSpent(5, 5)).toBe(true);
    expect(isSpent(0, 0)).toBe(true);
    expect(isSpent(1000, null)).toBe(false);
    expect(isSpent(undefined, 5)).toBe(false);
  });
});

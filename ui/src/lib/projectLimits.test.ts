import { checkLimits, limitChanges, limitValuesOf, NO_LIMITS } from './projectLimits';

describe("a project's limits as typed", () => {
  it('start from the stored ones, empty for none', () => {
    expect(limitValuesOf({ budget_daily_usd: 5, budget_monthly_usd: null, max_running_turns: 3 })).toEqual({ daily: '5', monthly: '', turns: '3' });
    expect(limitValuesOf({})).toEqual(NO_LIMITS);
  });

  it("are checked together: each field's problem under its name", () => {
    expect(checkLimits({ daily: '-1', monthly: '', turns: '1001' })).toEqual({
      daily: 'A budget cannot be negative: $0 or more, or empty for none.',
      turns: 'At most 1000 turns at once.',
    });
    expect(checkLimits({ daily: '0', monthly: '20', turns: '' })).toEqual({});
  });

  it('send what changed (null clears), or for a new project what is set', () => {
    const was = { budget_daily_usd: 5, budget_monthly_usd: null, max_running_turns: 2 };
    expect(limitChanges({ daily: '5', monthly: '', turns: '2' }, was)).toEqual({});
    expect(limitChanges({ daily: '', monthly: '100', turns: '' }, was)).toEqual({
      budget_daily_usd: null, budget_monthly_usd: 100, max_running_turns: null,
    });
    expect(limitChanges({ daily: '', monthly: '', turns: '4' }, {})).toEqual({ max_running_turns: 4 });
  });
});

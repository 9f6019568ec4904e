import { parseTurnLimit, turnLimitChanges, turnLimitInput } from './turnLimit';

describe("a project's turns at once as typed", () => {
  it('reads empty as no limit, and whole numbers from 1 to 1000', () => {
    expect(parseTurnLimit('')).toEqual({ value: null });
    expect(parseTurnLimit('  ')).toEqual({ value: null });
    expect(parseTurnLimit('1')).toEqual({ value: 1 });
    expect(parseTurnLimit(' 3 ')).toEqual({ value: 3 });
    expect(parseTurnLimit('1000')).toEqual({ value: 1000 });
  });

  it('says what is wrong with 0, too many, fractions, negatives or words', () => {
    expect(parseTurnLimit('0').error).toBe('At least 1 turn at once, or leave it empty for no limit.');
    expect(parseTurnLimit('1001').error).toBe('At most 1000 turns at once.');
    for (const junk of ['2.5', '-1', 'three', '1e3', '3 turns', '+2']) {
      expect(parseTurnLimit(junk).error, junk).toBe('Enter a whole number of turns from 1 to 1000, or leave it empty for no limit.');
    }
  });

  it('starts from the stored limit, and sends it only when changed, an emptied one as null', () => {
    expect(turnLimitInput({ max_running_turns: 4 })).toBe('4');
    expect(turnLimitInput({ max_running_turns: null })).toBe('');
    expect(turnLimitInput({})).toBe('');
    expect(turnLimitChanges('4', { max_running_turns: 4 })).toEqual({});
    expect(turnLimitChanges('', { max_running_turns: null })).toEqual({});
    expect(turnLimitChanges('', { max_running_turns: 4 })).toEqual({ max_running_turns: null });
    expect(turnLimitChanges('2', { max_running_turns: 4 })).toEqual({ max_running_turns: 2 });
    // A new project: only a limit set.
    expect(turnLimitChanges('', {})).toEqual({});
    expect(turnLimitChanges('3', {})).toEqual({ max_running_turns: 3 });
  });
});

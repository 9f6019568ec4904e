import { applyTheme, loadTheme, nextTheme, saveTheme, THEME_KEY } from './theme';

describe('the theme', () => {
  beforeEach(() => localStorage.clear());

  it('follows the system until a theme is chosen, and remembers the choice', () => {
    expect(loadTheme()).toBe('system');
    saveTheme('dark');
    expect(localStorage.getItem(THEME_KEY)).toBe('dark');
    expect(document.documentElement.dataset.theme).toBe('dark');
    expect(loadTheme()).toBe('dark');
    saveTheme('system');
    expect(localStorage.getItem(THEME_KEY)).toBeNull();
    expect(document.documentElement.dataset.theme).toBe('system');
  });

  it('ignores a stored value it does not know', () => {
    localStorage.setItem(THEME_KEY, 'purple');
    expect(loadTheme()).toBe('system');
  });

  it('cycles system, light, dark', () => {
    expect([nextTheme('system'), nextTheme('light'), nextTheme('dark')]).toEqual(['light', 'dark', 'system']);
    applyTheme('light');
    expect(document.documentElement.getAttribute('data-theme')).toBe('light');
  });
});

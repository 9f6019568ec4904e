// Light, dark, or whatever the system prefers. The choice is kept in localStorage and shown as
// `data-theme` on <html>; styles.css has the colours of each (`system` follows
// `prefers-color-scheme` there, so the page is right before any script runs).
import { useEffect, useState } from 'react';

export type ThemeChoice = 'system' | 'light' | 'dark';

export const THEME_KEY = 'conduit-theme';
const CHOICES: ThemeChoice[] = ['system', 'light', 'dark'];

export function loadTheme(storage: Storage | undefined = safeStorage()): ThemeChoice {
  const saved = storage?.getItem(THEME_KEY);
  return CHOICES.includes(saved as ThemeChoice) ? (saved as ThemeChoice) : 'system';
}

export function applyTheme(choice: ThemeChoice, root: HTMLElement = document.documentElement): void {
  root.dataset.theme = choice;
}

export function saveTheme(choice: ThemeChoice, storage: Storage | undefined = safeStorage()): void {
  if (choice === 'system') storage?.removeItem(THEME_KEY);
  else storage?.setItem(THEME_KEY, choice);
  applyTheme(choice);
}

/** The next choice in the cycle system → light → dark → system. */
export function nextTheme(choice: ThemeChoice): ThemeChoice {
  return CHOICES[(CHOICES.indexOf(choice) + 1) % CHOICES.length];
}

export function useTheme(): [ThemeChoice, (choice: ThemeChoice) => void] {
  const [choice, setChoice] = useState<ThemeChoice>(() => loadTheme());
  useEffect(() => applyTheme(choice), [choice]);
  return [
    choice,
    (next) => {
      saveTheme(next);
      setChoice(next);
    },
  ];
}

function safeStorage(): Storage | undefined {
  try {
    return typeof localStorage === 'undefined' ? undefined : localStorage;
  } catch {
    // Storage can be refused (privacy settings): the choice then lasts for the page.
    return undefined;
  }
}

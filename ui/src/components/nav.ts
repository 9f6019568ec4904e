// The sidebar's page links, in order. Pages add themselves here (and their route in main.tsx).
export interface NavEntry {
  to: string;
  label: string;
  /** Match the path exactly (the dashboard at `/`). */
  end?: boolean;
  /** Shown to a user only (a token or open mode has no sign-ins of its own). */
  userOnly?: boolean;
}

export const NAV: NavEntry[] = [
  { to: '/', label: 'Dashboard', end: true },
  { to: '/agents', label: 'Scheduled agents' },
  { to: '/webhooks', label: 'Webhooks' },
  { to: '/permissions', label: 'Permission log' },
  { to: '/rules', label: 'Rules' },
  { to: '/locks', label: 'Locks' },
  { to: '/processes', label: 'Processes' },
  { to: '/sign-ins', label: 'Sign-in sessions', userOnly: true },
];
